// Weighted selection: long-run shares, short-window smoothness, the scheduler's
// behaviour when weights change, and the typed error when nothing can be picked.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { staticDiscovery, createBalancer, NoInstanceError, UnknownServiceError } from '../src/index.ts'
import { EdfScheduler } from '../src/edf-scheduler.ts'
import { shares } from './helpers.ts'

const weighted = staticDiscovery([
  { service: 'orders', host: '10.0.0.1', port: 80, weight: 100 },
  { service: 'orders', host: '10.0.0.2', port: 80, weight: 200 },
  { service: 'orders', host: '10.0.0.3', port: 80, weight: 300 },
  { service: 'orders', host: '10.0.0.4', port: 80, weight: 400 }
])

test('shares over many picks match the weights', async () => {
  const balancer = createBalancer({ service: 'orders', discovery: weighted })
  const s = shares(balancer, 'orders', 100_000)
  assert.ok(Math.abs(s['10.0.0.1:80']! - 0.1) < 0.001, `10.0.0.1: ${s['10.0.0.1:80']}`)
  assert.ok(Math.abs(s['10.0.0.2:80']! - 0.2) < 0.001)
  assert.ok(Math.abs(s['10.0.0.3:80']! - 0.3) < 0.001)
  assert.ok(Math.abs(s['10.0.0.4:80']! - 0.4) < 0.001)
  const picks = balancer.stats().services[0]!.instances.map((i) => i.picks)
  assert.deepEqual(picks, [10_000, 20_000, 30_000, 40_000], 'stats count every pick')
  await balancer.close()
})

test('a short window already shows the intended shares (picks interleave)', async () => {
  const balancer = createBalancer({ service: 'orders', discovery: weighted })
  for (let window = 0; window < 20; window++) {
    const s = shares(balancer, 'orders', 10) // one full rotation of weights 1:2:3:4
    assert.equal(s['10.0.0.1:80'], 0.1, `window ${window}`)
    assert.equal(s['10.0.0.4:80'], 0.4, `window ${window}`)
  }
  // Equal weights: every round of three picks reaches each instance once.
  const even = createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: ['10.0.0.1:80', '10.0.0.2:80', '10.0.0.3:80'] }) })
  for (let round = 0; round < 50; round++) {
    const hosts = Array.from({ length: 3 }, () => even.pick('orders').host).sort()
    assert.deepEqual(hosts, ['10.0.0.1', '10.0.0.2', '10.0.0.3'], `round ${round}`)
  }
  await Promise.all([balancer.close(), even.close()])
})

test('service names match case-insensitively', async () => {
  const balancer = createBalancer({ service: 'Orders', discovery: weighted })
  assert.equal(typeof balancer.pick('ORDERS').host, 'string')
  assert.equal(typeof balancer.pick('orders').host, 'string')
  assert.throws(() => balancer.pick('payments'), (err: unknown) => err instanceof UnknownServiceError && err.code === 'LAMEDUCK_ERR_UNKNOWN_SERVICE')
  await balancer.close()
})

test('scheduler: a weight that grows takes effect at once, not after the gap its old weight earned', () => {
  const edf = new EdfScheduler<string>()
  edf.reset(['big', 'small'], [100, 1])
  for (let i = 0; i < 10; i++) edf.pick() // small's next turn is ~100 picks away
  edf.reset(['big', 'small'], [100, 100])
  const next = Array.from({ length: 10 }, () => edf.pick())
  assert.ok(next.filter((m) => m === 'small').length >= 4, `small picked ${next.filter((m) => m === 'small').length} of 10 right after its weight grew`)
})

test('scheduler: pickExcept skips members and keeps the rotation sound', () => {
  const edf = new EdfScheduler<string>()
  edf.reset(['a', 'b', 'c'], [1, 1, 1])
  assert.equal(edf.pickExcept((m) => m !== 'c'), 'c')
  assert.equal(edf.pickExcept(() => true), undefined)
  const counts: Record<string, number> = { a: 0, b: 0, c: 0 }
  for (let i = 0; i < 3_000; i++) counts[edf.pick()!]!++
  assert.deepEqual(Object.values(counts).map((n) => Math.round(n / 100)), [10, 10, 10])
})

test('no instance: a typed error naming the service and the reason', async () => {
  const discovery = staticDiscovery({ orders: [] })
  const balancer = createBalancer({ service: 'orders', discovery })
  assert.throws(() => balancer.pick('orders'), (err: unknown) => {
    assert.ok(err instanceof NoInstanceError)
    assert.equal(err.code, 'LAMEDUCK_ERR_NO_INSTANCE')
    assert.equal(err.service, 'orders')
    assert.equal(err.reason, 'none-registered')
    assert.match(err.message, /'orders'/)
    return true
  })
  discovery.set('orders', [{ host: '10.0.0.1', port: 80, weight: 0 }])
  assert.throws(() => balancer.pick('orders'), (err: unknown) => err instanceof NoInstanceError && err.reason === 'no-weight')
  discovery.set('orders', [{ host: '10.0.0.1', port: 80, weight: 0 }, { host: '10.0.0.2', port: 80 }])
  assert.equal(balancer.pick('orders').host, '10.0.0.2', 'weight 0 is never picked')
  await balancer.close()
})
