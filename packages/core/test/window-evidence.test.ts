// The observed window (issue 26): a WindowEvidence stands in for one part of the window and tells
// the drain when that term is over; the window then counts the evidence's rest from there.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createLifecycle, memoryRegistry, virtualClock, type EvidenceReading, type LifecycleOptions, type PhaseChange, type WindowEvidence } from '@lameduck/core'

const base = { id: '10.0.0.7:orders:3000', service: 'orders', host: '10.0.0.7', port: 3000 }

type Fake = WindowEvidence & { set(r: EvidenceReading): void, begun: number[], closed: number }

function fakeEvidence (restMs = 2_000): Fake {
  let reading: EvidenceReading = { state: 'pending', detail: 'watching' }
  const listeners = new Set<() => void>()
  const fake: Fake = {
    name: 'test endpoint',
    part: 'endpointLagMs',
    restMs,
    begun: [],
    closed: 0,
    begin (now) { fake.begun.push(now) },
    read: () => reading,
    onChange (fn) { listeners.add(fn); return () => listeners.delete(fn) },
    set (r) { reading = r; for (const fn of [...listeners]) fn() },
    describe: () => ({ pod: 'orders-1' }),
    close () { fake.closed++ }
  }
  return fake
}

/** Serving on a virtual clock; `drain()` starts the offline sequence and returns its report promise. */
async function serving (options: Partial<LifecycleOptions>) {
  const clock = virtualClock()
  const lifecycle = createLifecycle({ clock, windows: 'kubernetes', maxRequestMs: 1_000, shutdownTimeoutMs: 120_000, ...options })
  const phases: PhaseChange[] = []
  lifecycle.on('phase', (c) => phases.push(c))
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  return { clock, lifecycle, phases, drain: () => lifecycle.offline('SIGTERM') }
}

test('the window ends at the observed flip + the rest, not at the preset (15 s)', async () => {
  const evidence = fakeEvidence(2_000)
  const { clock, lifecycle, phases, drain } = await serving({ windowEvidence: evidence })
  const done = drain()
  const start = clock.now()
  assert.deepEqual(evidence.begun, [start])
  await clock.advance(3_000)
  assert.equal(lifecycle.state, 'draining', 'pending: still serving')
  assert.equal(lifecycle.drain!.windowEndsAt, lifecycle.drain!.latestWindowEndAt, 'while pending the budget bounds it')
  evidence.set({ state: 'over', at: clock.now(), detail: "EndpointSlice 'orders-x' lists 10.0.0.7 terminating" })
  await clock.advance(0)
  assert.equal(lifecycle.drain!.windowEndsAt, start + 5_000)
  assert.deepEqual(lifecycle.status().drain!.windowTerms.map((t) => [t.term, t.by, t.endsAt]), [['registry', 'none', start], ['endpointLagMs', 'observed', start + 5_000]])
  await clock.advance(2_000)
  const report = await done
  assert.equal(report.windowEndedAt, start + 5_000)
  assert.deepEqual(report.windowTerms.map((t) => [t.term, t.by]), [['registry', 'none'], ['endpointLagMs', 'observed']])
  assert.match(report.windowTerms[1]!.detail, /test endpoint: EndpointSlice 'orders-x' lists 10\.0\.0\.7 terminating \+ 2 s rest/)
  assert.match(phases.find((p) => p.phase === 'inflight')!.reason, /window elapsed: endpointLagMs observed last/)
})

test('never before the flip: a flip later than the preset holds the window; control: without evidence it ends at 15 s, before the flip', async () => {
  const evidence = fakeEvidence(1_000)
  const observed = await serving({ windowEvidence: evidence })
  const done = observed.drain()
  const start = observed.clock.now()
  await observed.clock.advance(30_000)
  assert.equal(observed.lifecycle.state, 'draining', 'the preset\'s 15 s passed, the endpoint has not flipped')
  evidence.set({ state: 'over', at: observed.clock.now(), detail: 'terminating' })
  await observed.clock.advance(999)
  assert.equal(observed.lifecycle.state, 'draining')
  await observed.clock.advance(1)
  assert.equal((await done).windowEndedAt, start + 31_000)

  const control = await serving({})
  const plain = control.drain()
  const plainStart = control.clock.now()
  await control.clock.advance(31_000)
  assert.equal((await plain).windowEndedAt, plainStart + 15_000, 'the preset ends at 15 s whatever the endpoint does')
})

test('a flip that never comes: bounded by the shutdown budget, and the report says the term was pending', async () => {
  const evidence = fakeEvidence()
  const { clock, lifecycle, phases, drain } = await serving({ windowEvidence: evidence, shutdownTimeoutMs: 40_000 })
  const done = drain()
  const latest = lifecycle.drain!.latestWindowEndAt
  assert.equal(latest, clock.now() + 39_000)
  await clock.advance(40_000)
  const report = await done
  assert.equal(report.windowEndedAt, latest)
  assert.deepEqual(report.windowTerms.map((t) => [t.term, t.by, t.endsAt]), [['registry', 'none', report.startedAt], ['endpointLagMs', 'pending', null]])
  assert.match(phases.find((p) => p.phase === 'inflight')!.reason, /shutdown budget reached, test endpoint: watching/)
})

test('unavailable (no RBAC): the preset window, and the report says so', async () => {
  const evidence = fakeEvidence()
  evidence.set({ state: 'unavailable', detail: 'LAMEDUCK_ERR_K8S_FORBIDDEN: endpointslices is forbidden' })
  const { clock, drain } = await serving({ windowEvidence: evidence })
  const done = drain()
  const start = clock.now()
  await clock.advance(20_000)
  const report = await done
  assert.equal(report.windowEndedAt, start + 15_000)
  assert.equal(report.windowTerms[1]!.by, 'preset')
  assert.match(report.windowTerms[1]!.detail, /unavailable \(LAMEDUCK_ERR_K8S_FORBIDDEN.*the preset's endpointLagMs/)
})

test('unavailable during the drain: the preset from then on', async () => {
  const evidence = fakeEvidence()
  const { clock, drain } = await serving({ windowEvidence: evidence })
  const done = drain()
  const start = clock.now()
  await clock.advance(5_000)
  evidence.set({ state: 'unavailable', detail: 'the watch fails' })
  await clock.advance(10_000)
  assert.equal((await done).windowEndedAt, start + 15_000)
})

test('with a registry: the registry term (every other part, from the confirmation) and the endpoint term; the later one ends the window', async () => {
  const evidence = fakeEvidence(1_000)
  const { clock, lifecycle, drain } = await serving({ registry: memoryRegistry(), windows: { preset: 'nacos', endpointLagMs: 15_000 }, windowEvidence: evidence })
  const done = drain()
  const start = clock.now()
  evidence.set({ state: 'over', at: clock.now(), detail: 'terminating' })
  await clock.advance(0)
  const terms = lifecycle.drain!.windowTerms
  assert.deepEqual(terms.map((t) => [t.term, t.by, t.endsAt]), [['registry', 'confirmed', start + 11_500], ['endpointLagMs', 'observed', start + 1_000]])
  await clock.advance(12_000)
  const report = await done
  assert.equal(report.windowEndedAt, start + 11_500, 'nacos 11.5 s without the endpoint lag; the endpoint term ended long before')
})

test('the endpoint flipped before the drain began: the rest counts from the flip', async () => {
  const evidence = fakeEvidence(2_000)
  const { clock, drain } = await serving({ windowEvidence: evidence })
  await clock.advance(1_000)
  evidence.set({ state: 'over', at: clock.now(), detail: 'terminating' })
  await clock.advance(500)
  const done = drain()
  const start = clock.now()
  await clock.advance(5_000)
  assert.equal((await done).windowEndedAt, start + 1_500)
})

test('/status shows the evidence; the lifecycle closes it when stopped; without evidence the report has the one registry term', async () => {
  const evidence = fakeEvidence()
  const { lifecycle } = await serving({ windowEvidence: evidence })
  const status = lifecycle.status()
  assert.deepEqual(status.windowEvidence, { name: 'test endpoint', part: 'endpointLagMs', restMs: 2_000, reading: { state: 'pending', detail: 'watching' }, pod: 'orders-1' })
  await lifecycle.stopped()
  assert.equal(evidence.closed, 1)

  const plain = await serving({})
  assert.equal(plain.lifecycle.status().windowEvidence, null)
  const done = plain.drain()
  await plain.clock.advance(15_000)
  assert.deepEqual((await done).windowTerms.map((t) => [t.term, t.by]), [['registry', 'none']])
})

test('a windowEvidence that is not one is refused at the edge', () => {
  assert.throws(() => createLifecycle({ windowEvidence: {} as never }), { code: 'LAMEDUCK_ERR_INVALID_OPTION', message: /windowEvidence/ })
  assert.throws(() => createLifecycle({ windowEvidence: { ...fakeEvidence(), part: 'nope' } as never }), { message: /windowEvidence\.part/ })
  assert.throws(() => createLifecycle({ windowEvidence: { ...fakeEvidence(), restMs: -1 } as never }), { message: /windowEvidence\.restMs/ })
})
