// Eureka as deployed: peers that replicate in 500 ms batches (PeerEurekaNode), and
// self-preservation on (PeerAwareInstanceRegistryImpl), with its renewal-threshold
// arithmetic: expected renews per minute x 0.85, updated on register and cancel.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { propagationWindow } from '@lameduck/core'
import { eurekaWindows } from '@lameduck/eureka'
import { startEureka, startEurekaCluster, type EurekaServer } from '../src/eureka/index.ts'
import { body, call, until } from './eureka-helpers.ts'

const lease = { leaseInfo: { renewalIntervalInSecs: 1, durationInSecs: 1 } }

async function listed (s: EurekaServer, id: string): Promise<boolean> {
  const apps = (await call('GET', `${s.url}/apps/`)).json
  const orders = apps.applications.application as Array<{ instance: Array<{ instanceId: string }> }>
  return orders.some((a) => a.instance.some((i) => i.instanceId === id))
}

test('a cancel on peer A reaches peer B one replication batch later; B does not replicate it back', async (t) => {
  const cluster = await startEurekaCluster({ responseCacheUpdateIntervalMs: 100 })
  t.after(() => cluster.close())
  const [a, b] = cluster.servers as [EurekaServer, EurekaServer]
  assert.equal((await call('POST', `${a.url}/apps/orders`, { body: body('orders-1') })).status, 204)
  await until(() => listed(b, 'orders-1'), 'B to learn the registration')
  await until(() => a.replication().pending === 0, 'A\'s queue to drain')

  const at = Date.now()
  assert.equal((await call('DELETE', `${a.url}/apps/orders/orders-1`)).status, 200)
  assert.equal((await call('GET', `${b.url}/apps/orders/orders-1`)).status, 200, 'B still holds it right after')
  await until(async () => (await call('GET', `${b.url}/apps/orders/orders-1`)).status === 404, 'B to apply the cancel')
  const applied = Date.now() - at
  assert.ok(applied >= 500, `B applied the cancel after ${applied} ms: one 500 ms batch`)
  await until(async () => !(await listed(b, 'orders-1')), 'B\'s read-only cache to drop it')
  const onB = Date.now() - at

  const deletes = b.requests().filter((r) => r.method === 'DELETE')
  assert.equal(deletes.length, 1)
  assert.deepEqual([b.replication().batches, b.replication().requests], [0, 0], 'a replicated request is never replicated again')

  const single = eurekaWindows({ responseCacheUpdateIntervalMs: 100, registryFetchIntervalMs: 0, balancer: 'none' })
  const peers = eurekaWindows({ responseCacheUpdateIntervalMs: 100, registryFetchIntervalMs: 0, balancer: 'none', peers: true, marginMs: 500 })
  assert.ok(propagationWindow(single).totalMs < onB, `one server's window (${propagationWindow(single).totalMs} ms) is short of B's ${onB} ms (negative control)`)
  // Server terms plus the window's margin for request latency and timer jitter.
  assert.ok(onB <= propagationWindow(peers).totalMs, `B's lag ${onB} ms is inside the window with the replication term (${propagationWindow(peers).totalMs} ms)`)
})

test('heartbeats and status changes replicate too, and a peer that lost a lease gets a register', async (t) => {
  const cluster = await startEurekaCluster({ useReadOnlyCache: false, replicationBatchMs: 50 })
  t.after(() => cluster.close())
  const [a, b] = cluster.servers as [EurekaServer, EurekaServer]
  await call('POST', `${a.url}/apps/orders`, { body: body('orders-1') })
  await until(async () => (await call('GET', `${b.url}/apps/orders/orders-1`)).status === 200, 'B to learn it')
  await call('PUT', `${a.url}/apps/orders/orders-1/status?value=OUT_OF_SERVICE`)
  await until(() => b.snapshot()[0]?.status === 'OUT_OF_SERVICE', 'the status on B')
  // B loses the lease behind A's back (a replicated cancel, as if from a third peer).
  await call('DELETE', `${b.url}/apps/orders/orders-1`, { headers: { 'x-netflix-discovery-replication': 'true' } })
  assert.equal(b.snapshot().length, 0)
  await call('PUT', `${a.url}/apps/orders/orders-1`)
  await until(() => b.snapshot().length === 1, 'the heartbeat\'s 404 on B to be followed by a register')
  assert.ok(b.requests().some((r) => r.method === 'PUT' && r.path.startsWith('/eureka/apps/ORDERS/orders-1?') && r.status === 404), 'the replicated heartbeat got a 404')
})

async function registerAll (s: EurekaServer, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `orders-${i}`)
  for (const id of ids) assert.equal((await call('POST', `${s.url}/apps/orders`, { body: body(id, lease) })).status, 204)
  return ids
}

// Measured renews per "minute" are renewsMeasureIntervalMs (1 s here), and clients renew
// twice per interval: the expected-renews arithmetic holds as with 30 s heartbeats.
const SCALED = { renewsMeasureIntervalMs: 1_000, evictionIntervalTimerInMs: 60_000, leaseExpiryBug: false, responseCacheUpdateIntervalMs: 100 }

async function lapseMost (s: EurekaServer, t: { after(fn: () => unknown): void }): Promise<{ lapsed: string[], stoppedAt: number }> {
  const ids = await registerAll(s, 10)
  let beating = ids
  const beats = setInterval(() => { for (const id of beating) call('PUT', `${s.url}/apps/orders/${id}`).catch(() => {}) }, 500)
  t.after(() => clearInterval(beats))
  await until(() => s.selfPreservation().expiryEnabled, 'renews above the threshold', { timeoutMs: 10_000 })
  beating = ids.slice(0, 2)
  return { lapsed: ids.slice(2), stoppedAt: Date.now() }
}

test('self-preservation (on by default): when most leases lapse at once, eviction stops', async (t) => {
  const s = await startEureka(SCALED)
  t.after(() => s.close())
  assert.equal(s.options.selfPreservation, true)
  // Spring Cloud opens with one expected client; each register adds one: 11 x 2 renews/min x 0.85.
  const before = await registerAll(s, 1)
  assert.deepEqual([s.selfPreservation().expectedClients, s.selfPreservation().renewsThreshold], [2, 3])
  await call('DELETE', `${s.url}/apps/orders/${before[0]}`)
  assert.deepEqual([s.selfPreservation().expectedClients, s.selfPreservation().renewsThreshold], [1, 1], 'a cancel takes one off')

  const { lapsed, stoppedAt } = await lapseMost(s, t)
  assert.deepEqual([s.selfPreservation().expectedClients, s.selfPreservation().renewsThreshold], [11, 18])
  await until(() => !s.selfPreservation().expiryEnabled, 'renews to fall to the threshold', { timeoutMs: 10_000 })
  await until(() => Date.now() > stoppedAt + 1_500, 'the lapsed leases to expire')
  assert.deepEqual(s.evict(), [], 'nothing is evicted')
  assert.equal(s.snapshot().length, 10)
  assert.equal((await call('GET', `${s.url}/apps/orders/${lapsed[0]}`)).status, 200, 'and lapsed instances are still served')
})

test('negative control: with self-preservation off the lapsed leases are evicted', async (t) => {
  const s = await startEureka({ ...SCALED, selfPreservation: false })
  t.after(() => s.close())
  const { lapsed, stoppedAt } = await lapseMost(s, t)
  await until(() => Date.now() > stoppedAt + 1_500, 'the lapsed leases to expire')
  const evicted: string[] = []
  await until(() => { evicted.push(...s.evict()); return evicted.length === lapsed.length }, 'every lapsed lease to be evicted (a share per run)')
  assert.equal(s.snapshot().length, 2)
})
