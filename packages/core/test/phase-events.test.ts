// The drain's phases as events (issue 29): telemetry builds its timeline from
// 'phase', each carrying what ended the phase before it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createLifecycle, memoryRegistry, virtualClock, type LifecycleOptions, type PhaseChange } from '@lameduck/core'

const base = { id: '127.0.0.1:orders:3000', service: 'orders', host: '127.0.0.1', port: 3000 }

async function drainWith (options: Partial<LifecycleOptions>) {
  const clock = virtualClock()
  const lifecycle = createLifecycle({ registry: memoryRegistry(), clock, windows: { serverCacheMs: 10_000 }, maxRequestMs: 1_000, ...options })
  const phases: PhaseChange[] = []
  const order: string[] = []
  lifecycle.on('state', (c) => order.push(`state:${c.to}`))
  lifecycle.on('phase', (c) => { phases.push(c); order.push(`phase:${c.phase}`) })
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  const done = lifecycle.offline('admin')
  await clock.advance(20_000)
  const report = await done
  await lifecycle.stopped()
  return { phases, order, report }
}

test('each phase is announced once, in order, with what ended the one before and when', async () => {
  const step = { name: 'sidecar drain', budgetMs: 1_000, async run () {} }
  const { phases, order, report } = await drainWith({ afterWindow: [step] })
  assert.deepEqual(phases.map((p) => [p.previous, p.phase]), [[null, 'deregistering'], ['deregistering', 'window'], ['window', 'sidecar'], ['sidecar', 'inflight']])
  assert.deepEqual(phases.map((p) => p.reason), ['admin', 'deregistration confirmed', 'window elapsed', 'sidecar drain done'])
  assert.equal(phases[0]!.at, report.startedAt)
  assert.equal(phases[1]!.at, report.deregisteredAt)
  assert.equal(phases[2]!.at, report.windowEndedAt)
  assert.deepEqual(order.slice(order.indexOf('state:draining'), order.indexOf('state:offline') + 1),
    ['state:draining', 'phase:deregistering', 'phase:window', 'phase:sidecar', 'phase:inflight', 'state:offline'])
})

test('no steps: the window goes straight to the in-flight wait; nothing registered: the window counts from the start', async () => {
  const { phases } = await drainWith({ registry: undefined })
  assert.deepEqual(phases.map((p) => p.phase), ['deregistering', 'window', 'inflight'])
  assert.match(phases[1]!.reason, /nothing was registered/)
  assert.equal(phases[2]!.reason, 'window elapsed')
})
