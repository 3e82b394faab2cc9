// Connect failures go to another instance for any method (the body is sent once,
// to the live instance); other failures only for idempotent requests when allowed.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { fetch, request } from 'undici'
import { createBalancer, staticDiscovery, NoInstanceError } from '../src/index.ts'
import { closeAfter, closedPort, upstream, waitFor } from './helpers.ts'

test('a closed port: POSTs still succeed on another instance, each body sent exactly once', async (t) => {
  const live = closeAfter(t, await upstream('live'))
  const dead = await closedPort()
  // The dead instance is heavy so the first pick of each request goes to it; a high
  // ejectAfter keeps it in rotation, so every request below fails over once.
  const discovery = staticDiscovery([
    { service: 'orders', host: '127.0.0.1', port: dead, weight: 1_000 },
    { service: 'orders', host: '127.0.0.1', port: live.port, weight: 1 }
  ])
  const balancer = closeAfter(t, createBalancer({ service: 'orders', discovery, ejectAfter: 1_000 }))
  for (let i = 0; i < 5; i++) {
    const res = await request('http://orders/orders', { dispatcher: balancer, method: 'POST', body: `order-${i}`, headers: { 'content-type': 'text/plain' } })
    assert.equal(res.statusCode, 200)
    assert.equal(await res.body.text(), 'live')
  }
  const res = await fetch('http://orders/orders', { dispatcher: balancer, method: 'POST', body: 'order-fetch' })
  assert.equal(await res.text(), 'live')
  const streamed = await request('http://orders/orders', { dispatcher: balancer, method: 'POST', body: Readable.from(['order-', 'stream']) })
  assert.equal(await streamed.body.text(), 'live')
  assert.deepEqual(live.requests.map((r) => `${r.method} ${r.body}`),
    ['POST order-0', 'POST order-1', 'POST order-2', 'POST order-3', 'POST order-4', 'POST order-fetch', 'POST order-stream'])
  const deadStats = balancer.stats().services[0]!.instances.find((i) => i.address === `127.0.0.1:${dead}`)!
  assert.equal(deadStats.connectFailures, 7, 'every request tried the dead instance first')
  await balancer.close()
  await live.close()
})

test('a failed connect ejects the instance for the backoff period, then it is tried again', async (t) => {
  const live = closeAfter(t, await upstream('live'))
  const dead = await closedPort()
  const discovery = staticDiscovery({ orders: [`127.0.0.1:${dead}`, live.address] })
  const balancer = closeAfter(t, createBalancer({ service: 'orders', discovery, ejectBackoff: { initialMs: 300, jitter: 0 } }))
  const deadStats = (): { picks: number, ejected: boolean, connectFailures: number } =>
    balancer.stats().services[0]!.instances.find((i) => i.address === `127.0.0.1:${dead}`)!
  for (let i = 0; i < 2; i++) await (await request('http://orders/', { dispatcher: balancer })).body.text()
  assert.equal(deadStats().ejected, true)
  assert.equal(deadStats().connectFailures, 1)
  const picks = deadStats().picks
  for (let i = 0; i < 10; i++) await (await request('http://orders/', { dispatcher: balancer })).body.text()
  assert.equal(deadStats().picks, picks, 'not picked while ejected')
  await waitFor('the ejection to end', () => !deadStats().ejected)
  for (let i = 0; i < 4; i++) await (await request('http://orders/', { dispatcher: balancer })).body.text()
  assert.equal(deadStats().connectFailures, 2, 'tried again after the backoff, failed, ejected again')
  assert.equal(deadStats().ejected, true)
  assert.equal(live.requests.length, 16, 'no request was lost')
  await balancer.close()
  await live.close()
})

test('ejectAfter counts connect failures in a row before ejecting', async (t) => {
  const live = closeAfter(t, await upstream('live'))
  const dead = await closedPort()
  const discovery = staticDiscovery([
    { service: 'orders', host: '127.0.0.1', port: dead, weight: 1_000 },
    { service: 'orders', host: '127.0.0.1', port: live.port, weight: 1 }
  ])
  const balancer = closeAfter(t, createBalancer({ service: 'orders', discovery, ejectAfter: 2 }))
  const deadStats = (): { ejected: boolean, connectFailures: number } => balancer.stats().services[0]!.instances.find((i) => i.address === `127.0.0.1:${dead}`)!
  assert.equal(await (await request('http://orders/', { dispatcher: balancer })).body.text(), 'live')
  assert.deepEqual([deadStats().connectFailures, deadStats().ejected], [1, false])
  assert.equal(await (await request('http://orders/', { dispatcher: balancer })).body.text(), 'live')
  assert.deepEqual([deadStats().connectFailures, deadStats().ejected], [2, true])
})

test('all instances down → LAMEDUCK_ERR_NO_INSTANCE naming the service, with the connect error as cause', async (t) => {
  const discovery = staticDiscovery({ orders: [`127.0.0.1:${await closedPort()}`, `127.0.0.1:${await closedPort()}`] })
  const balancer = closeAfter(t, createBalancer({ service: 'orders', discovery }))
  await assert.rejects(request('http://orders/', { dispatcher: balancer, method: 'POST', body: 'x' }), (err: unknown) => {
    assert.ok(err instanceof NoInstanceError)
    assert.equal(err.code, 'LAMEDUCK_ERR_NO_INSTANCE')
    assert.equal(err.service, 'orders')
    assert.equal(err.reason, 'all-ejected')
    assert.equal((err.cause as { code?: string }).code, 'ECONNREFUSED')
    assert.deepEqual(err.counts, { registered: 2, draining: 0, ejected: 2, zeroWeight: 0 })
    return true
  })
  // fetch wraps dispatcher errors in TypeError('fetch failed'); ours is the cause.
  await assert.rejects(fetch('http://orders/', { dispatcher: balancer }), (err: unknown) => {
    assert.equal(((err as Error).cause as NoInstanceError).code, 'LAMEDUCK_ERR_NO_INSTANCE')
    return true
  })
  await balancer.close()

  const noRetry = closeAfter(t, createBalancer({ service: 'orders', discovery, maxConnectRetries: 0, ejectAfter: 10 }))
  await assert.rejects(request('http://orders/', { dispatcher: noRetry }), { code: 'LAMEDUCK_ERR_NO_INSTANCE', reason: 'connect-failed' })
  await noRetry.close()
})

test('after the request was sent: idempotent requests retry elsewhere only with retryIdempotent', async (t) => {
  const flaky = closeAfter(t, await upstream('flaky'))
  flaky.reply = (req) => { req.socket.destroy() } // read the request, then drop the connection
  const live = closeAfter(t, await upstream('live'))
  const discovery = staticDiscovery([
    { service: 'orders', host: '127.0.0.1', port: flaky.port, weight: 1_000 },
    { service: 'orders', host: '127.0.0.1', port: live.port, weight: 1 }
  ])
  const strict = closeAfter(t, createBalancer({ service: 'orders', discovery }))
  await assert.rejects(request('http://orders/', { dispatcher: strict }), { code: 'UND_ERR_SOCKET' })
  await strict.close()

  const lenient = closeAfter(t, createBalancer({ service: 'orders', discovery, retryIdempotent: true }))
  assert.equal(await (await request('http://orders/', { dispatcher: lenient })).body.text(), 'live')
  assert.equal(await (await request('http://orders/', { dispatcher: lenient, method: 'PUT', body: 'v' })).body.text(), 'live')
  await assert.rejects(request('http://orders/', { dispatcher: lenient, method: 'POST', body: 'once' }), { code: 'UND_ERR_SOCKET' })
  const alone = closeAfter(t, createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: [flaky.address] }), retryIdempotent: 3 }))
  await assert.rejects(request('http://orders/', { dispatcher: alone }), { code: 'UND_ERR_SOCKET' }, 'nobody else to try: the failure itself')
  assert.deepEqual(flaky.requests.map((r) => `${r.method} ${r.body}`), ['GET ', 'GET ', 'PUT v', 'POST once', 'GET '])
  assert.deepEqual(live.requests.map((r) => `${r.method} ${r.body}`), ['GET ', 'PUT v'], 'the POST was not repeated')
  await lenient.close()
  await Promise.all([flaky.close(), live.close()])
})
