// Warmup ramps on a virtual clock: each curve at five points of the window, an
// all-new fleet, the first-snapshot rule, clock skew and bad metadata.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { memoryRegistry, METADATA_KEYS, virtualClock } from '@lameduck/core'
import type { VirtualClock } from '@lameduck/core'
import { createBalancer } from '../src/index.ts'
import type { Balancer, BalancerOptions } from '../src/index.ts'
import { instance, recordingLogger, shares } from './helpers.ts'

const W = 100_000 // warmup window
const HOUR = 3_600_000
/** Picks per sample; the EDF rotation is exact, so 1 % absolute is a generous tolerance. */
const PICKS = 10_000
const TOLERANCE = 0.01

function setup (options: Partial<BalancerOptions> = {}): { clock: VirtualClock, registry: ReturnType<typeof memoryRegistry>, make: () => Balancer } {
  const clock = virtualClock()
  const registry = memoryRegistry({ clock })
  const make = (): Balancer => createBalancer({ service: 'orders', discovery: registry, clock, refreshIntervalMs: 0, ...options })
  return { clock, registry, make }
}

async function at (clock: VirtualClock, t: number): Promise<void> {
  await clock.advance(t - clock.now())
}

function effective (balancer: Balancer, id: string): number {
  const found = balancer.stats().services[0]!.instances.find((i) => i.id === id)
  assert.ok(found, `instance ${id} is in stats`)
  return found.effectiveWeight
}

const curves: { curve: 'linear' | 'slow-start', slowStart?: BalancerOptions['slowStart'], points: [number, number][] }[] = [
  // Dubbo: trunc(uptime / (warmup / weight)), floor 1.
  { curve: 'linear', points: [[0.1, 10], [0.3, 30], [0.5, 50], [0.7, 70], [0.9, 90]] },
  // Envoy: 100 × max(10 %, (t/W)^(1/2)) with aggression 2.
  { curve: 'slow-start', slowStart: { aggression: 2, minWeightPercent: 10 }, points: [[0.1, 31.623], [0.3, 54.772], [0.5, 70.711], [0.7, 83.666], [0.9, 94.868]] }
]

for (const { curve, slowStart, points } of curves) {
  test(`${curve}: a new instance's share follows the curve at five points of the window`, async () => {
    const { clock, registry, make } = setup({ curve, slowStart })
    const old = clock.now() - 10 * W
    await registry.register(instance('old-1', { registeredAt: old, warmupMs: W }))
    await registry.register(instance('old-2', { registeredAt: old, warmupMs: W }))
    const balancer = make()
    const t0 = clock.now()
    // The provider's registeredAt is irrelevant for an arrival: the ramp runs on the consumer's clock.
    await registry.register(instance('new', { registeredAt: t0 - 5 * W, warmupMs: W }))
    for (const [fraction, weight] of points) {
      await at(clock, t0 + fraction * W)
      assert.ok(Math.abs(effective(balancer, 'new') - weight) < 0.01, `${curve} weight at ${fraction * 100}% is ${effective(balancer, 'new')}, expected ${weight}`)
      const share = shares(balancer, 'orders', PICKS).new ?? 0
      const expected = weight / (weight + 200)
      assert.ok(Math.abs(share - expected) < TOLERANCE, `${curve} share at ${fraction * 100}%: ${share.toFixed(4)}, expected ${expected.toFixed(4)}`)
    }
    await at(clock, t0 + W)
    assert.equal(effective(balancer, 'new'), 100)
    assert.ok(Math.abs((shares(balancer, 'orders', PICKS).new ?? 0) - 1 / 3) < TOLERANCE)
    assert.equal(balancer.stats().services[0]!.instances.find((i) => i.id === 'new')!.warming, false)
    await balancer.close()
    assert.equal(clock.pending, 0, 'no timers left after close')
  })
}

test('slow-start: minWeightPercent floors the start, slowStart.windowMs overrides the published warmup', async () => {
  const { clock, registry, make } = setup({ curve: 'slow-start', slowStart: { aggression: 2, minWeightPercent: 10, windowMs: W / 2 } })
  await registry.register(instance('old', { registeredAt: clock.now() - 10 * W, warmupMs: W }))
  const balancer = make()
  const t0 = clock.now()
  await registry.register(instance('new', { registeredAt: t0, warmupMs: W }))
  assert.equal(effective(balancer, 'new'), 10, 'floor at 10 %')
  await at(clock, t0 + W / 4)
  assert.ok(Math.abs(effective(balancer, 'new') - 70.711) < 0.01, 'half of the overridden window')
  await at(clock, t0 + W / 2)
  assert.equal(effective(balancer, 'new'), 100, 'done after windowMs, not after the published warmup')
  await balancer.close()
})

for (const curve of ['linear', 'slow-start'] as const) {
  test(`${curve}: an all-new fleet that arrives at once is balanced by weight throughout the ramp`, async () => {
    const { clock, registry, make } = setup({ curve })
    const gone = instance('gone', { registeredAt: clock.now() - 10 * W, warmupMs: W })
    await registry.register(gone)
    const balancer = make()
    const t0 = clock.now()
    await registry.register(instance('b', { registeredAt: t0, warmupMs: W, weight: 100 }))
    await registry.register(instance('c', { registeredAt: t0, warmupMs: W, weight: 200 }))
    await registry.register(instance('d', { registeredAt: t0, warmupMs: W, weight: 300 }))
    await registry.deregister(gone)
    for (const fraction of [0.1, 0.5, 0.9, 1]) {
      await at(clock, t0 + fraction * W)
      const s = shares(balancer, 'orders', 6_000)
      assert.ok(Math.abs((s.b ?? 0) - 1 / 6) < TOLERANCE, `b at ${fraction}: ${s.b}`)
      assert.ok(Math.abs((s.c ?? 0) - 2 / 6) < TOLERANCE, `c at ${fraction}: ${s.c}`)
      assert.ok(Math.abs((s.d ?? 0) - 3 / 6) < TOLERANCE, `d at ${fraction}: ${s.d}`)
    }
    await balancer.close()
  })
}

test('instances present at the consumer start ramp from their registeredAt', async () => {
  const { clock, registry, make } = setup()
  const now = clock.now()
  await registry.register(instance('warm', { registeredAt: now - 2 * W, warmupMs: W }))
  await registry.register(instance('warming', { registeredAt: now - 0.3 * W, warmupMs: W }))
  const balancer = make()
  assert.equal(effective(balancer, 'warm'), 100)
  assert.equal(effective(balancer, 'warming'), 30, '30 % into its window already')
  await at(clock, now + 0.2 * W)
  assert.equal(effective(balancer, 'warming'), 50)
  await balancer.close()
})

test('clock skew: a registeredAt 1 h ahead or behind still ramps over the window', async (t) => {
  await t.test('new arrivals ignore registeredAt entirely', async () => {
    const { clock, registry, make } = setup()
    await registry.register(instance('old', { registeredAt: clock.now() - 10 * W, warmupMs: W }))
    const balancer = make()
    const t0 = clock.now()
    await registry.register(instance('ahead', { registeredAt: t0 + HOUR, warmupMs: W }))
    await registry.register(instance('behind', { registeredAt: t0 - HOUR, warmupMs: W }))
    for (const [fraction, weight] of [[0, 1], [0.1, 10], [0.5, 50], [0.9, 90], [1, 100]] as const) {
      await at(clock, t0 + fraction * W)
      assert.equal(effective(balancer, 'ahead'), weight, `ahead at ${fraction}: not frozen`)
      assert.equal(effective(balancer, 'behind'), weight, `behind at ${fraction}: not skipped`)
    }
    await balancer.close()
  })

  await t.test('at the consumer start, a registeredAt in the future ramps over the full window from now', async () => {
    const { clock, registry, make } = setup()
    const now = clock.now()
    await registry.register(instance('ahead', { registeredAt: now + HOUR, warmupMs: W }))
    await registry.register(instance('old', { registeredAt: now - 10 * W, warmupMs: W }))
    const balancer = make()
    assert.equal(effective(balancer, 'ahead'), 1)
    await at(clock, now + 0.5 * W)
    assert.equal(effective(balancer, 'ahead'), 50)
    await at(clock, now + W)
    assert.equal(effective(balancer, 'ahead'), 100, 'warm after one window, not after the hour')
    await balancer.close()
  })

  await t.test('at the consumer start, a registeredAt older than the window counts as warm (documented limit)', async () => {
    const { clock, registry, make } = setup()
    await registry.register(instance('behind', { registeredAt: clock.now() - HOUR, warmupMs: W }))
    const balancer = make()
    assert.equal(effective(balancer, 'behind'), 100)
    await balancer.close()
  })

  await t.test('a new registration of a known instance (registeredAt changed) ramps anew, whatever its clock', async () => {
    const { clock, registry, make } = setup()
    await registry.register(instance('a', { registeredAt: clock.now() - 10 * W, warmupMs: W }))
    await registry.register(instance('b', { registeredAt: clock.now() - 10 * W, warmupMs: W }))
    const balancer = make()
    const t0 = clock.now()
    await registry.register(instance('a', { registeredAt: t0 - HOUR, warmupMs: W }))
    assert.equal(effective(balancer, 'a'), 1)
    await at(clock, t0 + 0.5 * W)
    assert.equal(effective(balancer, 'a'), 50)
    await balancer.close()
  })
})

test('bad metadata: safe default weight, one warning per instance, no crash', async () => {
  const { clock, registry } = setup()
  const { logger, warnings } = recordingLogger()
  const good = instance('good', { registeredAt: clock.now() - 10 * W, warmupMs: W })
  const bad = { ...instance('bad', { registeredAt: clock.now(), warmupMs: W }), metadata: { [METADATA_KEYS.warmup]: 'abc', [METADATA_KEYS.weight]: '-5' } }
  await registry.register(good)
  await registry.register(bad)
  const balancer = createBalancer({ service: 'orders', discovery: registry, clock, logger, refreshIntervalMs: 1_000 })
  const stats = balancer.stats().services[0]!.instances.find((i) => i.id === 'bad')!
  assert.equal(stats.weight, 100, 'default weight')
  assert.equal(stats.effectiveWeight, 100, 'no warmup: full weight')
  assert.equal(stats.problems.length, 2)
  const s = shares(balancer, 'orders', 1_000)
  assert.equal(s.bad, 0.5)
  await clock.advance(5_000) // five refreshes re-read the same bad metadata
  const about = warnings.filter((w) => w.obj.instance === 'bad')
  assert.equal(about.length, 1, 'warned once')
  assert.match(String(about[0]!.msg), /bad warmup metadata/)
  assert.deepEqual(about[0]!.obj.problems, stats.problems)
  assert.ok(stats.problems.some((p) => p.includes('lameduck.warmup="abc"')))
  assert.ok(stats.problems.some((p) => p.includes('lameduck.weight="-5"')))
  assert.equal(warnings.filter((w) => w.obj.instance === 'good').length, 0)
  await balancer.close()
})

test('the default tick follows a short ramp in small steps, and stops once warm', async () => {
  const { clock, registry, make } = setup()
  await registry.register(instance('old', { registeredAt: clock.now() - HOUR, warmupMs: 2_000 }))
  const balancer = make()
  const t0 = clock.now()
  await registry.register(instance('new', { registeredAt: t0, warmupMs: 2_000 }))
  const seen = new Set<number>()
  for (let t = 0; t <= 2_000; t += 40) {
    await at(clock, t0 + t)
    seen.add(effective(balancer, 'new'))
  }
  assert.ok(seen.size >= 45, `${seen.size} distinct weights over a 2 s ramp (a 1 s tick would give 3)`)
  assert.equal(effective(balancer, 'new'), 100)
  assert.equal(clock.pending, 0, 'no timer once every instance is warm (refreshIntervalMs is 0)')
  await balancer.close()
})
