// A provider with the weight ramp (for weight-only consumers) republishes Dubbo's
// `weight` as it warms up. The balancer ramps from the warmup metadata itself: it
// must not multiply its own ramp by the ramped `weight` (a new instance would get
// about a quarter of its due share half-way through, and the ramp would look twice
// as long). Provider lifecycle, registry and balancer share one virtual clock.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createLifecycle, memoryRegistry, rampedMetadata, silentLogger, virtualClock, WeightRamp, type Instance, type Registry } from '@lameduck/core'
import { createBalancer } from '../src/index.ts'
import { instance, shares } from './helpers.ts'

const W = 20_000

test('a ramping `weight` is not ramped twice: the effective weight is the balancer\'s own curve over lameduck.weight', async () => {
  const clock = virtualClock()
  const memory = memoryRegistry({ clock })
  const withWeight = (i: Instance, weight: number | null): Instance => weight === null ? i : { ...i, metadata: rampedMetadata(i.metadata, weight) }
  // What the Eureka and Nacos adapters do with weightRamp: register at the ramp's weight, publish each step.
  const ramp = new WeightRamp({}, async (i, weight) => { await memory.register(withWeight(i, weight)) })
  const registry: Registry = {
    register: async (i) => { await memory.register(withWeight(i, ramp.weightFor(i))) },
    deregister: (i) => memory.deregister(i),
    close: async () => {}
  }
  await memory.register(instance('old', { registeredAt: clock.now() - 10 * W, warmupMs: W }))
  await memory.register(instance('old-2', { registeredAt: clock.now() - 10 * W, warmupMs: W }))
  const balancer = createBalancer({ service: 'orders', discovery: memory, clock, refreshIntervalMs: 0 })
  const lifecycle = createLifecycle({ registry, clock, warmupMs: W, weight: 100, windows: { clientFetchMs: 2_000 } })
  ramp.attach({ lifecycle, logger: silentLogger })
  await lifecycle.start({ id: 'new', service: 'orders', host: '127.0.0.1', port: 4000 })
  const t0 = clock.now()
  const seen = (): { effectiveWeight: number } => balancer.stats().services[0]!.instances.find((i) => i.id === 'new')!
  const published = (): string => memory.registered('orders').find((i) => i.id === 'new')!.metadata.weight!

  for (const fraction of [0.25, 0.5, 0.75]) {
    await clock.advance(t0 + fraction * W - clock.now())
    const own = Math.trunc(fraction * 100) // the linear curve over lameduck.weight 100
    const twice = own * Number(published()) / 100 // what multiplying in the ramped `weight` would give
    assert.notEqual(published(), '100', 'the provider is still ramping `weight`')
    // Within 2: the balancer recomputes weights on ticks of W / 50 (400 ms = 2 weight units here).
    const effective = seen().effectiveWeight
    assert.ok(Math.abs(effective - own) <= 2, `at ${fraction * 100} % of the warmup: ${effective}, expected ${own} (twice ramped: ${twice}; published weight ${published()})`)
    const share = shares(balancer, 'orders', 10_000).new ?? 0
    assert.ok(Math.abs(share - effective / (effective + 200)) < 0.01, `share ${share.toFixed(3)} at ${fraction * 100} %`)
  }
  await clock.advance(t0 + W - clock.now())
  assert.equal(published(), '100')
  assert.equal(seen().effectiveWeight, 100)
  lifecycle.beginClose('test over')
  await lifecycle.stopped()
  await balancer.close()
})
