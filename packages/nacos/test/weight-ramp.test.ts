// weightRamp against the devkit's Nacos server: the registration carries the first
// step as the Nacos weight (through nacosWeight) and metadata `weight`, each step
// registers the same registration again, and a step never brings back an instance
// that has been deregistered. The lifecycle and the beats run on a virtual clock.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createLifecycle, InvalidOptionError, silentLogger, virtualClock } from '@lameduck/core'
import { startNacos } from '@lameduck/devkit'
import { nacosDiscovery, nacosRegistry, type NacosRegistryOptions } from '@lameduck/nacos'
import { waitFor } from './helpers.ts'

const base = { id: '127.0.0.1:orders:3000', service: 'orders', host: '127.0.0.1', port: 3000 }

async function setup (t: { after: (fn: () => Promise<void>) => void }, options: Partial<NacosRegistryOptions> = {}) {
  const server = await startNacos()
  const clock = virtualClock()
  const registry = nacosRegistry({ serverList: server.serverList, clock, weightRamp: true, ...options })
  // 20 s of warmup, consumers refreshing every 2 s: 10 steps 5 → 15 → … → 95 → 100.
  const lifecycle = createLifecycle({ registry, clock, warmupMs: 20_000, weight: 100, windows: { serverCacheMs: 500, clientFetchMs: 2_000 } })
  const detach = registry.weightRamp!.attach({ lifecycle, logger: silentLogger })
  t.after(async () => { detach(); lifecycle.beginClose('test over'); await lifecycle.stopped(); await server.close() })
  const held = (): { weight: number, metadata: Record<string, string> } | undefined => server.instances('orders')[0] as never
  return { server, clock, registry, lifecycle, held }
}

test('weightRamp: the Nacos weight and metadata `weight` start at the first step and grow by registering again', async (t) => {
  const { clock, lifecycle, held, registry } = await setup(t)
  await lifecycle.start(base)
  assert.equal(held()!.weight, 5)
  assert.equal(held()!.metadata.weight, '5')
  assert.equal(held()!.metadata.warmup, '0')
  assert.equal(held()!.metadata['lameduck.weight'], '100')
  for (const expected of [15, 25]) {
    await clock.advance(2_000)
    await waitFor(`weight ${expected}`, () => held()?.weight === expected)
  }
  assert.equal(held()!.metadata.weight, '25')
  assert.equal((registry.describe().registered as Array<{ weight: number }>)[0]!.weight, 25, 'what the beats carry')
  await clock.advance(20_000)
  await waitFor('the full weight', () => held()?.weight === 100)
})

test('weightRamp: nacosWeight maps each step (metadata `weight` stays on lameduck\'s scale)', async (t) => {
  const { lifecycle, held } = await setup(t, { nacosWeight: (w) => w / 100 })
  await lifecycle.start(base)
  assert.equal(held()!.weight, 0.05)
  assert.equal(held()!.metadata.weight, '5')
})

test('weightRamp: no step after the drain started; a deregistered instance is never registered again by a step', async (t) => {
  const { clock, lifecycle, held, server } = await setup(t)
  await lifecycle.start(base)
  await clock.advance(2_000)
  await waitFor('weight 15', () => held()?.weight === 15)
  const offline = lifecycle.offline('test')
  await waitFor('deregistered', () => server.instances('orders').length === 0)
  for (let i = 0; i < 10; i++) await clock.advance(1_000)
  await new Promise((resolve) => setTimeout(resolve, 200))
  assert.equal(server.instances('orders').length, 0)
  await clock.advance(30_000)
  await offline
  assert.equal(server.instances('orders').length, 0)
})

test('weightRamp is a provider option: nacosDiscovery refuses it', () => {
  assert.throws(() => nacosDiscovery({ serverList: '127.0.0.1:8848', weightRamp: true }), (e: InvalidOptionError) => e instanceof InvalidOptionError && /provider option/.test(e.message))
})
