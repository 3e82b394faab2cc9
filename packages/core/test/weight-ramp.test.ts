// The weight ramp for weight-only consumers: its schedule from the warmup and the
// window, and the observer on a lifecycle (virtual clock): steps while serving,
// the registration's own weight, no re-ramp for the same registration, nothing
// published once draining, a fresh ramp for a new registration.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  createLifecycle, InvalidOptionError, memoryRegistry, rampedMetadata, resolveWeightRamp, virtualClock, WeightRamp, weightRampSchedule,
  WINDOW_PRESETS, type Instance, type Registry
} from '@lameduck/core'

const base = { id: '127.0.0.1:orders:3000', service: 'orders', host: '127.0.0.1', port: 3000 }

test('schedule: steps no closer than the slowest refresh, the curve\'s middle value in each, the full weight at warmupMs', () => {
  // Spring consumers of Eureka: the balancer cache (35 s) is the slowest refresh; 120 s of warmup → 3 steps of 40 s.
  const spring = weightRampSchedule({ warmupMs: 120_000, weight: 100, window: WINDOW_PRESETS['eureka-spring'] })
  assert.equal(spring.refreshMs, 35_000)
  assert.equal(spring.stepMs, 40_000)
  assert.deepEqual(spring.steps, [{ atMs: 0, weight: 15 }, { atMs: 40_000, weight: 50 }, { atMs: 80_000, weight: 85 }, { atMs: 120_000, weight: 100 }])
  // No periodic hop (kubernetes): at most 20 steps, each a multiple of a twentieth of the weight
  // (Spring's expanded list then cycles in at most 60 picks beside two peers at 100).
  const k8s = weightRampSchedule({ warmupMs: 120_000, weight: 100, window: WINDOW_PRESETS.kubernetes })
  assert.equal(k8s.stepMs, 6_000)
  assert.deepEqual(k8s.steps.map((s) => s.weight), [5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95, 100])
  assert.deepEqual(k8s.steps.slice(0, 2), [{ atMs: 0, weight: 5 }, { atMs: 6_000, weight: 10 }])
  // A weight that is no multiple of 20: whole numbers.
  assert.deepEqual(weightRampSchedule({ warmupMs: 40_000, weight: 7, window: WINDOW_PRESETS.none, stepMs: 10_000 }).steps.map((s) => s.weight), [1, 3, 4, 6, 7])
  // stepMs given: taken (never below warmup / 20).
  assert.equal(weightRampSchedule({ warmupMs: 60_000, weight: 100, window: WINDOW_PRESETS.none, stepMs: 15_000 }).steps.length, 5)
  // Whole weights, at least 1; equal neighbours merged.
  const small = weightRampSchedule({ warmupMs: 60_000, weight: 2, window: WINDOW_PRESETS.none, stepMs: 3_000 })
  assert.deepEqual(small.steps.map((s) => s.weight), [1, 2])
  // A warmup shorter than the refresh: one step (half) before the full weight.
  assert.deepEqual(weightRampSchedule({ warmupMs: 10_000, weight: 100, window: WINDOW_PRESETS['eureka-spring'] }).steps, [{ atMs: 0, weight: 50 }, { atMs: 10_000, weight: 100 }])
  // Nothing to ramp.
  assert.deepEqual(weightRampSchedule({ warmupMs: 0, weight: 100, window: WINDOW_PRESETS.nacos }).steps, [{ atMs: 0, weight: 100 }])
  assert.deepEqual(weightRampSchedule({ warmupMs: 60_000, weight: 0, window: WINDOW_PRESETS.nacos }).steps, [{ atMs: 0, weight: 0 }])
})

test('resolveWeightRamp: true, false, { stepMs }; anything else named', () => {
  assert.equal(resolveWeightRamp('weightRamp', undefined), null)
  assert.equal(resolveWeightRamp('weightRamp', false), null)
  assert.deepEqual(resolveWeightRamp('weightRamp', true), {})
  assert.deepEqual(resolveWeightRamp('weightRamp', { stepMs: 5_000 }), { stepMs: 5_000 })
  assert.throws(() => resolveWeightRamp('weightRamp', 'yes'), InvalidOptionError)
  assert.throws(() => resolveWeightRamp('weightRamp', { steps: 5 }), /steps/)
  assert.throws(() => resolveWeightRamp('weightRamp', { stepMs: 0 }), /weightRamp\.stepMs/)
})

test('rampedMetadata: Dubbo\'s weight ramps and its warmup is 0; lameduck\'s keys stay', () => {
  const md = rampedMetadata({ 'lameduck.weight': '100', 'lameduck.warmup': '20000', weight: '100', warmup: '20000', timestamp: '1' }, 5)
  assert.deepEqual(md, { 'lameduck.weight': '100', 'lameduck.warmup': '20000', weight: '5', warmup: '0', timestamp: '1' })
})

interface Published { at: number, weight: number, registeredAt: string }

/** What an adapter does: registers with the ramp's weight, publishes steps by registering again. */
function setup (stepMs?: number) {
  const clock = virtualClock()
  const memory = memoryRegistry({ clock })
  const published: Published[] = []
  const registrations: string[] = []
  const withWeight = (instance: Instance, weight: number | null): Instance => weight === null ? instance : { ...instance, metadata: rampedMetadata(instance.metadata, weight) }
  const ramp = new WeightRamp(stepMs === undefined ? {} : { stepMs }, async (instance, weight) => {
    published.push({ at: clock.now(), weight, registeredAt: instance.metadata['lameduck.registeredAt']! })
    await memory.register(withWeight(instance, weight))
  })
  const registry: Registry = {
    register: async (instance) => {
      const weight = ramp.weightFor(instance)
      registrations.push(String(weight))
      await memory.register(withWeight(instance, weight))
    },
    deregister: (instance) => memory.deregister(instance),
    close: () => memory.close()
  }
  // Consumers refresh every 2 s: a 20 s warmup is 10 steps of 2 s.
  const lifecycle = createLifecycle({ registry, clock, warmupMs: 20_000, weight: 100, windows: { serverCacheMs: 1_000, clientFetchMs: 2_000 } })
  const detach = ramp.attach({ lifecycle, logger: { debug () {}, info () {}, warn () {}, error () {} } })
  const published$ = (): Record<string, string> => memory.registered('orders')[0]?.metadata ?? {}
  return { clock, memory, ramp, lifecycle, published, registrations, detach, metadata: published$ }
}

test('observer: registers at the first step, publishes each step on time, stops at the full weight', async () => {
  const { clock, lifecycle, published, registrations, metadata, ramp } = setup()
  await lifecycle.start(base)
  const t0 = lifecycle.registeredAt!
  assert.deepEqual(registrations, ['5'])
  assert.equal(metadata().weight, '5')
  assert.equal(metadata().warmup, '0')
  assert.equal(metadata()['lameduck.weight'], '100')
  await clock.advance(25_000)
  assert.deepEqual(published.map((p) => p.weight), [15, 25, 35, 45, 55, 65, 75, 85, 95, 100])
  assert.deepEqual(published.map((p) => p.at - t0), [2_000, 4_000, 6_000, 8_000, 10_000, 12_000, 14_000, 16_000, 18_000, 20_000])
  assert.equal(metadata().weight, '100')
  assert.deepEqual(ramp.describe(), { attached: true, registeredAt: t0, step: 11, of: 11, weight: 100, stepMs: 2_000, done: true, stopped: false, publishFailures: 0 })
  await clock.advance(60_000)
  assert.equal(published.length, 10, 'nothing after the full weight')
  assert.equal(clock.pending, 0)
})

test('observer: the same registration registered again carries the weight reached, and does not restart the ramp', async () => {
  const { clock, lifecycle, published, ramp } = setup()
  await lifecycle.start(base)
  await clock.advance(7_000)
  const instance = lifecycle.instance!
  // An adapter's re-registration (heartbeat 404, a Nacos beat) asks for the same registration's weight.
  assert.equal(ramp.weightFor(instance), 35)
  lifecycle.emit('registered', instance) // as if announced again: ignored
  await clock.advance(1_000)
  assert.deepEqual(published.map((p) => p.weight), [15, 25, 35, 45])
})

test('observer: nothing is published once draining; a new registration (online) ramps again from the first step', async () => {
  const { clock, lifecycle, published, registrations, metadata, ramp } = setup()
  await lifecycle.start(base)
  await clock.advance(5_000)
  assert.deepEqual(published.map((p) => p.weight), [15, 25])
  const offline = lifecycle.offline('test')
  assert.equal(lifecycle.state, 'draining')
  await clock.advance(30_000)
  await offline
  assert.equal(published.length, 2, 'no step while draining or offline')
  assert.equal(ramp.describe().stopped, true)
  await lifecycle.online('test')
  assert.deepEqual(registrations, ['5', '5'])
  assert.equal(metadata().weight, '5')
  await clock.advance(2_000)
  assert.equal(published.at(-1)!.weight, 15)
  assert.equal(published.at(-1)!.registeredAt, String(lifecycle.registeredAt))
})

test('observer: a failed publish is reported and the next step goes on; detach stops it', async () => {
  const clock = virtualClock()
  const warnings: string[] = []
  let fail = true
  const sent: number[] = []
  const ramp = new WeightRamp({}, async (_i, weight) => {
    if (fail) { fail = false; throw new Error('registry down') }
    sent.push(weight)
  })
  const registry: Registry = { register: async () => {}, deregister: async () => {}, close: async () => {} }
  const lifecycle = createLifecycle({ registry, clock, warmupMs: 20_000, windows: { clientFetchMs: 2_000 } })
  const detach = ramp.attach({ lifecycle, logger: { debug () {}, info () {}, warn: (_o: object, m?: string) => { warnings.push(String(m)) }, error () {} } })
  await lifecycle.start(base)
  await clock.advance(4_000)
  assert.deepEqual(sent, [25])
  assert.match(warnings[0]!, /publishing weight 15 failed: registry down/)
  assert.equal(ramp.describe().publishFailures, 1)
  detach()
  await clock.advance(30_000)
  assert.deepEqual(sent, [25])
})

test('not attached: registers the full weight and says so once', () => {
  const warnings: string[] = []
  const ramp = new WeightRamp({}, async () => {}, { debug () {}, info () {}, warn: (_o: object, m?: string) => { warnings.push(String(m)) }, error () {} })
  const instance: Instance = { ...base, status: 'UP', metadata: { 'lameduck.warmup': '20000', 'lameduck.registeredAt': '1' } }
  assert.equal(ramp.weightFor(instance), null)
  assert.equal(ramp.weightFor(instance), null)
  assert.equal(warnings.length, 1)
  assert.match(warnings[0]!, /not attached/)
})

test('only the attached lifecycle\'s instance ramps: another registered through the same registry gets the full weight', async () => {
  const { lifecycle, ramp } = setup()
  await lifecycle.start(base)
  const other: Instance = { ...base, id: '127.0.0.1:orders:3001', port: 3001, status: 'UP', metadata: { 'lameduck.warmup': '20000', 'lameduck.weight': '100', 'lameduck.registeredAt': '5' } }
  assert.equal(ramp.weightFor(other), null)
  assert.equal(ramp.weightFor(lifecycle.instance!), 5)
})
