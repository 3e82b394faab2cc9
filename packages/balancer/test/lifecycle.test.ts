// Membership and resources: refresh vs change events, graceful close of removed
// instances' pools, balancer close, option validation, staticDiscovery.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { InvalidOptionError, memoryRegistry, virtualClock } from '@lameduck/core'
import type { Discovery, Instance } from '@lameduck/core'
import { createBalancer, staticDiscovery } from '../src/index.ts'
import { closeAfter, upstream, waitFor } from './helpers.ts'

test('refreshIntervalMs re-reads a discovery that sends no events; events apply at once', async () => {
  const clock = virtualClock()
  let list: Instance[] = [{ id: 'a', service: 'orders', host: '10.0.0.1', port: 80, status: 'UP', metadata: {} }]
  const silent: Discovery = { instances: () => list, subscribe: () => () => {} }
  const balancer = createBalancer({ service: 'orders', discovery: silent, clock, refreshIntervalMs: 30_000 })
  list = [{ id: 'b', service: 'orders', host: '10.0.0.2', port: 80, status: 'UP', metadata: {} }]
  await clock.advance(29_999)
  assert.equal(balancer.pick('orders').id, 'a', 'the old copy until the refresh')
  await clock.advance(1)
  assert.equal(balancer.pick('orders').id, 'b')
  await balancer.close()
  assert.equal(clock.pending, 0)

  const registry = memoryRegistry({ clock })
  const evented = createBalancer({ service: 'orders', discovery: registry, clock, refreshIntervalMs: 0, emptyListProtection: false })
  await registry.register({ id: 'c', service: 'ORDERS', host: '10.0.0.3', port: 80, status: 'UP', metadata: {} })
  assert.equal(evented.pick('orders').id, 'c', 'subscribe event applied without waiting')
  await registry.setStatus({ id: 'c', service: 'ORDERS' }, 'OUT_OF_SERVICE')
  assert.throws(() => evented.pick('orders'), { code: 'LAMEDUCK_ERR_NO_INSTANCE', reason: 'none-registered' })
  await evented.close()
})

test('a failing discovery keeps the last list and logs once', async () => {
  const clock = virtualClock()
  let fail = false
  const warnings: string[] = []
  const flaky: Discovery = {
    instances: () => { if (fail) throw new Error('registry down'); return [{ id: 'a', service: 'orders', host: '10.0.0.1', port: 80, status: 'UP', metadata: {} }] },
    subscribe: () => () => {}
  }
  const noop = (): void => {}
  const balancer = createBalancer({ service: 'orders', discovery: flaky, clock, refreshIntervalMs: 1_000, logger: { debug: noop, info: noop, error: noop, warn: (_o, m) => { warnings.push(String(m)) } } })
  fail = true
  await clock.advance(5_000)
  assert.equal(balancer.pick('orders').id, 'a')
  assert.equal(warnings.filter((w) => w.includes('discovery.instances failed')).length, 1)
  await balancer.close()
})

test('an instance removed from discovery finishes its in-flight request, then its pool closes', async (t) => {
  const slow = closeAfter(t, await upstream('slow', { keepAliveTimeout: 60_000 }))
  const other = closeAfter(t, await upstream('other'))
  let release = (): void => {}
  slow.reply = (_req, res) => { release = () => res.end('slow') }
  const discovery = staticDiscovery({ orders: [slow.address] })
  const balancer = closeAfter(t, createBalancer({ service: 'orders', discovery }))
  const inFlight = request('http://orders/', { dispatcher: balancer })
  await waitFor('the request to reach the slow instance', () => slow.requests.length === 1)
  discovery.set('orders', [other.address])
  assert.equal(await (await request('http://orders/', { dispatcher: balancer })).body.text(), 'other')
  release()
  const res = await inFlight
  assert.equal(res.statusCode, 200)
  assert.equal(await res.body.text(), 'slow', 'the in-flight request completed on the removed instance')
  // The server would keep the socket for 60 s; only the balancer closing the pool ends it now.
  await waitFor('the removed instance\'s pool to close its connection', () => slow.openConnections() === 0, 2_000)
})

test('close() waits for in-flight requests; afterwards requests fail with UND_ERR_CLOSED', async (t) => {
  const slow = closeAfter(t, await upstream('slow'))
  let release = (): void => {}
  slow.reply = (_req, res) => { release = () => res.end('done') }
  const balancer = createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: [slow.address] }) })
  const inFlight = request('http://orders/', { dispatcher: balancer })
  await waitFor('the request to arrive', () => slow.requests.length === 1)
  let closed = false
  const closing = balancer.close().then(() => { closed = true })
  await assert.rejects(request('http://orders/', { dispatcher: balancer }), { code: 'UND_ERR_CLOSED' })
  assert.equal(closed, false)
  release()
  assert.equal(await (await inFlight).body.text(), 'done')
  await closing
  await new Promise<void>((resolve) => balancer.close(resolve)) // idempotent, callback form
})

test('options are validated once, naming the option and the fix', () => {
  const discovery = staticDiscovery({ orders: [] })
  const bad: [Record<string, unknown>, string][] = [
    [{ discovery }, 'service'],
    [{ service: 'orders' }, 'discovery'],
    [{ service: 'orders', discovery, curve: 'cubic' }, 'curve'],
    [{ service: 'orders', discovery, refreshIntervalMs: -1 }, 'refreshIntervalMs'],
    [{ service: 'orders', discovery, slowStart: { aggression: 0 } }, 'slowStart.aggression'],
    [{ service: 'orders', discovery, slowStart: { minWeightPercent: 150 } }, 'slowStart.minWeightPercent'],
    [{ service: 'orders', discovery, maxConnectRetries: 1.5 }, 'maxConnectRetries'],
    [{ service: 'orders', discovery, consumerId: 'has space' }, 'consumerId'],
    [{ service: 'orders', discovery, ejectAfter: 0 }, 'ejectAfter'],
    [{ service: 'orders', discovery, ejectBackoff: { jitter: 5 } }, 'ejectBackoff.jitter'],
    [{ service: 'orders', discovery, ejectBackoff: { factor: Number.NaN } }, 'ejectBackoff.factor'],
    [{ service: 'orders', discovery, ejectBackoff: { max: 5 } }, 'ejectBackoff.max'],
    [{ service: 'orders', discovery, clock: { now: () => 0 } }, 'clock'],
    [{ service: 'orders', discovery, poolOptions: [] }, 'poolOptions'],
    [{ service: 'orders', discovery, unknownHosts: 'drop' }, 'unknownHosts'],
    [{ service: 'orders', discovery, servcie: 'typo' }, 'servcie'],
    [{ services: ['orders', 'ORDERS'], discovery }, 'services'],
    [{ service: 'http://orders', discovery }, 'services']
  ]
  for (const [options, option] of bad) {
    assert.throws(() => createBalancer(options as never), (err: unknown) => {
      assert.ok(err instanceof InvalidOptionError, `${option}: ${String(err)}`)
      assert.equal(err.option, option)
      assert.equal(err.code, 'LAMEDUCK_ERR_INVALID_OPTION')
      return true
    })
  }
})

test('staticDiscovery accepts addresses or instances, and set() notifies', async () => {
  const d = staticDiscovery({ Orders: ['127.0.0.1:3001', 'http://[::1]:3002', { host: '10.0.0.9', port: 80, weight: 5, id: 'nine' }] })
  const list = d.instances('orders')
  assert.deepEqual(list.map((i) => [i.id, i.host, i.port]), [['127.0.0.1:3001', '127.0.0.1', 3001], ['[::1]:3002', '::1', 3002], ['nine', '10.0.0.9', 80]])
  assert.equal(list[2]!.metadata['lameduck.weight'], '5')
  let seen: Instance[] = []
  const off = d.subscribe('ORDERS', (l) => { seen = l })
  d.set('orders', ['127.0.0.1:4000'])
  assert.equal(seen[0]!.port, 4000)
  off()
  assert.throws(() => staticDiscovery({ orders: ['127.0.0.1:0'] }), InvalidOptionError)
  assert.throws(() => staticDiscovery([{ host: 'x', port: 1 } as never]), InvalidOptionError)
  const b = createBalancer({ services: ['orders', 'payments'], discovery: d })
  assert.equal(b.pick('orders').port, 4000)
  assert.throws(() => b.pick('payments'), { reason: 'none-registered' })
  await b.close()
})

test('emptyListProtection: a list that suddenly goes empty keeps the last instances until discovery lists some again', async () => {
  const clock = virtualClock()
  const registry = memoryRegistry({ clock })
  const lines: string[] = []
  const logger = { debug () {}, info (_o: object, m?: string) { lines.push(m ?? '') }, warn (_o: object, m?: string) { lines.push(m ?? '') }, error () {} }
  const balancer = createBalancer({ service: 'orders', discovery: registry, clock, refreshIntervalMs: 0, logger })
  await registry.register({ id: 'a', service: 'orders', host: '10.0.0.1', port: 80, status: 'UP', metadata: {} })
  assert.equal(balancer.pick('orders').id, 'a')
  await registry.deregister({ id: 'a', service: 'orders', host: '10.0.0.1', port: 80, status: 'UP', metadata: {} })
  assert.equal(balancer.pick('orders').id, 'a', 'still routed: an empty list is not trusted')
  assert.ok(lines.some((l) => /lists no instance of 'orders'; keeping the last 1/.test(l)))
  await registry.register({ id: 'b', service: 'orders', host: '10.0.0.2', port: 80, status: 'UP', metadata: {} })
  assert.equal(balancer.pick('orders').id, 'b', 'a non-empty list replaces the kept one')
  assert.equal(balancer.pick('orders').id, 'b')
  await balancer.close()
})
