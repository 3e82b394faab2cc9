// The window counts from the CONFIRMED deregistration (issue 13.6): while the
// registry has not confirmed, the instance keeps serving and retrying, bounded by
// the shutdown budget, and says so in /status and the offline report.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { buildStatus, createLifecycle, virtualClock, type LifecycleOptions, type Registry } from '@lameduck/core'

const base = { id: '127.0.0.1:orders:3000', service: 'orders', host: '127.0.0.1', port: 3000 }
const WINDOW = { serverCacheMs: 10_000 }

function sleepOn (clock: ReturnType<typeof virtualClock>, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms))
}

async function serving (registry: Registry, options: Partial<LifecycleOptions> = {}, clock = virtualClock()) {
  const lifecycle = createLifecycle({ registry, clock, windows: WINDOW, maxRequestMs: 1_000, registryBackoff: { initialMs: 1_000, maxMs: 1_000, jitter: 0 }, ...options })
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  assert.equal(lifecycle.state, 'serving')
  return { clock, lifecycle }
}

test('a registry that never confirms: the instance serves and retries until the budget bound, then reports unconfirmed', async () => {
  let calls = 0
  const registry: Registry = { async register () {}, async deregister () { calls++; throw new Error('503 Service Unavailable') }, async close () {} }
  // bound = start + shutdownTimeoutMs − maxRequestMs = 30 s − 1 s = 29 s
  const { clock, lifecycle } = await serving(registry, { shutdownTimeoutMs: 30_000 })
  const done = lifecycle.offline('admin')
  await clock.advance(10_000) // a full window since the start: before, the drain ended here
  assert.equal(lifecycle.state, 'draining', 'no window has passed since a confirmed deregistration')
  const drain = lifecycle.drain!
  assert.equal(drain.phase, 'deregistering')
  assert.equal(drain.deregistration.state, 'unconfirmed')
  assert.match(drain.deregistration.lastError!, /503/)
  assert.equal(drain.latestWindowEndAt - drain.startedAt, 29_000)
  assert.equal(drain.windowEndsAt, drain.latestWindowEndAt, 'while unconfirmed, the phase ends at the bound')
  const status = buildStatus(lifecycle)
  assert.equal(status.deregistration?.state, 'unconfirmed')
  assert.equal(status.drain?.phase, 'deregistering')
  await clock.advance(18_999)
  assert.equal(lifecycle.state, 'draining')
  await clock.advance(1)
  const report = await done
  assert.equal(lifecycle.state, 'offline')
  assert.equal(report.totalMs, 29_000)
  assert.equal(report.deregisteredAt, null)
  assert.equal(report.deregistration.state, 'unconfirmed')
  assert.equal(report.deregistration.attempts, 29, 'one attempt a second, from 0 to 28 s')
  assert.match(report.deregistration.lastError!, /503/)
  assert.match(report.problems.at(-1)!.message, /has not confirmed deregistration within the shutdown budget \(29 attempt\(s\), last error: 503/)
  // Still retrying while offline; /status keeps saying so.
  await clock.advance(5_000)
  assert.ok(calls > 29)
  assert.equal(lifecycle.deregistration?.state, 'unconfirmed')
  await lifecycle.stopped()
})

test('a registry slower than the window: the window starts at the confirmation', async () => {
  const live = new Set<string>()
  const clock = virtualClock()
  const registry: Registry = {
    async register (i) { live.add(i.id) },
    async deregister (i) { await sleepOn(clock, 15_000); live.delete(i.id) },
    async close () {}
  }
  const { lifecycle } = await serving(registry, { registryTimeoutMs: 20_000, shutdownTimeoutMs: 60_000 }, clock)
  const done = lifecycle.offline('admin')
  await clock.advance(10_000)
  assert.equal(lifecycle.state, 'draining')
  assert.equal(lifecycle.drain?.phase, 'deregistering')
  assert.deepEqual([...live], [base.id], 'still registered')
  await clock.advance(5_000) // confirmed at 15 s
  assert.equal(lifecycle.drain?.phase, 'window')
  assert.equal(lifecycle.drain?.windowEndsAt, lifecycle.drain!.startedAt + 25_000)
  await clock.advance(9_999)
  assert.equal(lifecycle.state, 'draining', 'a full window after the confirmation')
  await clock.advance(1)
  const report = await done
  assert.equal(report.outcome, 'offline')
  assert.equal(report.deregisteredAt! - report.startedAt, 15_000)
  assert.equal(report.totalMs, 25_000)
  assert.deepEqual(report.deregistration, { state: 'confirmed', attempts: 1, lastError: null, confirmedAt: report.deregisteredAt })
  assert.equal(live.size, 0)
})

test('a registry that recovers mid-drain, after a window has passed since the start: the window counts from the success', async () => {
  let failures = 4
  const registry: Registry = {
    async register () {},
    async deregister () { if (failures-- > 0) throw new Error('ECONNREFUSED') },
    async close () {}
  }
  const { clock, lifecycle } = await serving(registry, { windows: { serverCacheMs: 5_000 }, registryBackoff: { initialMs: 2_000, maxMs: 2_000, jitter: 0 }, shutdownTimeoutMs: 60_000 })
  const done = lifecycle.offline('admin')
  // attempts at 0, 2, 4, 6 s fail; the one at 8 s succeeds → window ends at 13 s
  await clock.advance(7_999)
  assert.equal(lifecycle.drain?.phase, 'deregistering')
  assert.equal(lifecycle.drain?.deregistration.attempts, 4)
  await clock.advance(1)
  assert.equal(lifecycle.drain?.phase, 'window')
  await clock.advance(4_999)
  assert.equal(lifecycle.state, 'draining')
  await clock.advance(1)
  const report = await done
  assert.equal(report.totalMs, 13_000)
  assert.equal(report.deregisteredAt! - report.startedAt, 8_000)
  assert.equal(report.deregistration.state, 'confirmed')
  assert.equal(report.deregistration.attempts, 5)
  assert.match(report.deregistration.lastError!, /ECONNREFUSED/, 'the last failure is kept')
  assert.equal(buildStatus(lifecycle).deregistration?.state, 'confirmed')
})

test('a confirmation later than the budget allows: the window is cut at the bound, never before start + window', async () => {
  const clock = virtualClock()
  const registry: Registry = { async register () {}, async deregister () { await sleepOn(clock, 12_000) }, async close () {} }
  // bound = 20 s − 1 s = 19 s; confirmation at 12 s + 10 s window = 22 s → ends at 19 s
  const { lifecycle } = await serving(registry, { registryTimeoutMs: 30_000, shutdownTimeoutMs: 20_000 }, clock)
  const done = lifecycle.offline()
  await clock.advance(19_000)
  const report = await done
  assert.equal(report.totalMs, 19_000)
  assert.equal(report.deregistration.state, 'confirmed')
})

test('without a registry: nothing to deregister, the window counts from the start', async () => {
  const clock = virtualClock()
  const lifecycle = createLifecycle({ clock, windows: WINDOW })
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  const done = lifecycle.offline()
  await clock.advance(0)
  assert.equal(lifecycle.drain?.phase, 'window')
  await clock.advance(10_000)
  const report = await done
  assert.equal(report.totalMs, 10_000)
  assert.equal(report.deregistration.state, 'none')
})

test('the signal path (shutdown) waits for the confirmation too, within the budget, and then closes', async () => {
  const registry: Registry = { async register () {}, async deregister () { throw new Error('ECONNREFUSED') }, async close () {} }
  const { clock, lifecycle } = await serving(registry, { shutdownTimeoutMs: 30_000 })
  let closedAt: number | null = null
  lifecycle.on('state', (c) => { if (c.to === 'closing') closedAt = clock.now() })
  const t0 = clock.now()
  const down = lifecycle.shutdown('SIGTERM')
  await clock.advance(10_000)
  assert.equal(closedAt, null, 'before: closing (and exit) at start + window, still registered')
  await clock.advance(19_000)
  const report = await down
  assert.equal(closedAt! - t0, 29_000)
  assert.equal(report?.deregistration.state, 'unconfirmed')
  await lifecycle.stopped()
})
