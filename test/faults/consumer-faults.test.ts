// The consumer side, through @lameduck/balancer: instances whose port refuses
// (a crashed provider still in the registry) and instances that reset the
// connection before or in the middle of a response. A refused connect sent
// nothing and is retried elsewhere for any method; a reset after the request was
// sent is the caller's failure unless retryIdempotent allows another try of an
// idempotent request; a reset mid-response is always a failure, seen as an error
// on the body and never as a short successful one.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { request } from 'undici'
import { memoryRegistry } from '@lameduck/core'
import { createBalancer } from '@lameduck/balancer'
import { deadPort } from '@lameduck/test-utils'
import { startProvider, steadyLoad, until } from '../helpers.ts'

test('a crashed provider still registered (its port refuses): every request, POSTs included, is served elsewhere', async (t) => {
  const registry = memoryRegistry()
  const a = await startProvider('a', { registry })
  const b = await startProvider('b', { registry })
  t.after(() => Promise.all([a.app.close(), b.app.close()]))
  // Two registrations whose processes are gone: nothing listens on their ports.
  for (const id of ['dead-1', 'dead-2']) {
    const dead = await deadPort()
    t.after(dead.close)
    await registry.register({ id, service: 'orders', host: '127.0.0.1', port: dead.port, status: 'UP', metadata: { 'lameduck.weight': '300' } })
  }
  const balancer = createBalancer({ service: 'orders', discovery: registry, refreshIntervalMs: 0, ejectAfter: 1_000 })
  t.after(() => balancer.close())
  let n = 0
  const load = steadyLoad(async () => {
    const post = n++ % 2 === 0
    const res = await request('http://orders/work', { dispatcher: balancer, method: post ? 'POST' : 'GET', body: post ? `order-${n}` : null, headers: post ? { 'content-type': 'text/plain' } : {} })
    await res.body.dump()
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
    return String(res.headers['x-instance'])
  }, 5)
  await until(() => load.stats.ok + load.stats.failed >= 300, '300 requests', { timeoutMs: 120_000 }) // a count, not a rate
  await load.stop()
  assert.equal(load.stats.failed, 0, load.stats.errors.slice(0, 3).join(', '))
  assert.equal(a.served() + b.served(), load.stats.ok, 'each request served exactly once')
  const dead = balancer.stats().services[0]!.instances.filter((i) => i.id.startsWith('dead'))
  assert.ok(dead.every((i) => i.connectFailures > 10), 'the dead instances were picked (and failed over) again and again')
})

type Reset = 'before-response' | 'mid-response'

/** An instance that reads the request and then resets: before any response, or after the headers and part of the body. */
async function resetting (kind: Reset) {
  let requests = 0
  const server = createServer((req, res: ServerResponse) => {
    requests++
    req.resume()
    req.on('end', () => {
      if (kind === 'before-response') { req.socket.destroy(); return }
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100', 'x-instance': 'flaky' })
      res.write('0123456789')
      setTimeout(() => res.socket?.destroy(), 5)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as AddressInfo).port, requests: () => requests, close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }) }
}

for (const kind of ['before-response', 'mid-response'] as const) {
  for (const retryIdempotent of [false, true]) {
    test(`an instance resetting ${kind}, retryIdempotent ${retryIdempotent}: ${kind === 'mid-response' ? 'always a failure, on the body' : retryIdempotent ? 'GETs retried elsewhere, POSTs fail' : 'a failure for the caller'}`, async (t) => {
      const registry = memoryRegistry()
      const live = await startProvider('live', { registry })
      t.after(() => live.app.close())
      const flaky = await resetting(kind)
      t.after(() => flaky.close())
      await registry.register({ id: 'flaky', service: 'orders', host: '127.0.0.1', port: flaky.port, status: 'UP', metadata: {} })
      const balancer = createBalancer({ service: 'orders', discovery: registry, refreshIntervalMs: 0, retryIdempotent })
      t.after(() => balancer.close())
      const outcomes = { ok: 0, failed: 0, truncated: 0, failedByMethod: { GET: 0, POST: 0 } }
      for (let i = 0; i < 120; i++) {
        // Picks alternate between the two instances; methods go in pairs so each instance sees both.
        const method = i % 4 < 2 ? 'GET' : 'POST'
        try {
          const res = await request('http://orders/work', { dispatcher: balancer, method, body: method === 'POST' ? `order-${i}` : null, headers: method === 'POST' ? { 'content-type': 'text/plain' } : {} })
          const text = await res.body.text()
          if (res.headers['x-instance'] === 'flaky') outcomes.truncated++ // a body read that did not throw
          else if (res.statusCode === 200 && JSON.parse(text).id === 'live') outcomes.ok++
        } catch (err) {
          assert.match((err as { code?: string }).code ?? '', /^(UND_ERR_SOCKET|ECONNRESET)$/, `a reset is reported as one: ${(err as Error).message}`)
          outcomes.failed++
          outcomes.failedByMethod[method]++
        }
      }
      assert.equal(outcomes.truncated, 0, 'never a short body passed off as a response')
      assert.equal(outcomes.ok + outcomes.failed, 120)
      assert.ok(flaky.requests() > 20, `the flaky instance kept getting picks (${flaky.requests()})`)
      if (kind === 'mid-response' || !retryIdempotent) {
        assert.ok(outcomes.failedByMethod.GET > 0 && outcomes.failedByMethod.POST > 0, JSON.stringify(outcomes))
        assert.equal(outcomes.failed, flaky.requests(), 'each request that reached the flaky instance failed, once')
      } else {
        assert.equal(outcomes.failedByMethod.GET, 0, 'GETs were retried on the live instance')
        assert.ok(outcomes.failedByMethod.POST > 0, 'POSTs were not repeated')
        assert.equal(live.served(), outcomes.ok, 'each success was served once')
      }
    })
  }
}

test('malformed hosts in the registry next to a crashed provider: with an uncaughtException logger installed, nothing thrown, nothing lost, nothing hangs', { timeout: 60_000 }, async (t) => {
  const caught: unknown[] = []
  const onUncaught = (err: unknown): void => { caught.push(err) }
  process.on('uncaughtException', onUncaught)
  t.after(() => { process.off('uncaughtException', onUncaught) })
  const registry = memoryRegistry()
  const a = await startProvider('a', { registry })
  t.after(() => a.app.close())
  const hostile = ['10.0.0.5:8080', 'fe80::1%eth0', 'my host', 'evil.com:80@127.0.0.1'].map((host, i) =>
    ({ id: `hostile-${i}`, service: 'orders', host, port: 8080, status: 'UP' as const, metadata: { 'lameduck.weight': '500' } }))
  const deadAddress = await deadPort()
  t.after(deadAddress.close)
  const dead = { id: 'dead', service: 'orders', host: '127.0.0.1', port: deadAddress.port, status: 'UP' as const, metadata: { 'lameduck.weight': '1000' } }
  // As a registry that stores what providers send would list them.
  const discovery = { instances: (service: string) => [...registry.instances(service), dead, ...hostile], subscribe: () => () => {} }
  const balancer = createBalancer({ service: 'orders', discovery, refreshIntervalMs: 20, ejectAfter: 1_000 })
  t.after(() => balancer.close())
  let n = 0
  const load = steadyLoad(async () => {
    const post = n++ % 2 === 0
    const res = await request('http://orders/work', { dispatcher: balancer, method: post ? 'POST' : 'GET', body: post ? `order-${n}` : null, headers: post ? { 'content-type': 'text/plain' } : {} })
    await res.body.dump()
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
    return String(res.headers['x-instance'])
  }, 5)
  await until(() => load.stats.ok + load.stats.failed >= 200, '200 requests', { timeoutMs: 120_000 })
  await load.stop()
  assert.equal(load.stats.failed, 0, load.stats.errors.slice(0, 3).join(', '))
  assert.equal(a.served(), load.stats.ok, 'each request served exactly once')
  assert.deepEqual(balancer.stats().services[0]!.instances.map((i) => i.id).sort(), ['a', 'dead'])
  assert.deepEqual(caught.map(String), [])
})
