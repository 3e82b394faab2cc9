// weightRamp against the devkit's Eureka server: the registration carries the
// first step (and Dubbo's warmup 0), each step is a PUT .../metadata, a
// re-registration after a 404 carries the weight reached, and nothing moves once
// the instance is draining. The lifecycle and the heartbeats run on a virtual clock.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createLifecycle, silentLogger, virtualClock } from '@lameduck/core'
import { startEureka } from '@lameduck/devkit'
import { eurekaRegistry } from '@lameduck/eureka'
import { until } from './helpers.ts'

const base = { id: 'o1', service: 'orders', host: '127.0.0.1', port: 3001 }

async function setup (offlineMode: 'delete' | 'out-of-service' = 'delete') {
  const s = await startEureka({ useReadOnlyCache: false })
  const clock = virtualClock()
  const registry = eurekaRegistry({ url: s.url, clock, offlineMode, client: { eureka: { heartbeatInterval: 1_000 } }, leaseDurationSecs: 30, weightRamp: true })
  // 20 s of warmup, consumers refreshing every 2 s: 10 steps 5 → 15 → … → 95 → 100.
  const lifecycle = createLifecycle({ registry, clock, warmupMs: 20_000, weight: 100, windows: { serverCacheMs: 1_000, clientFetchMs: 2_000 } })
  const detach = registry.weightRamp!.attach({ lifecycle, logger: silentLogger })
  const onServer = (): Record<string, string> => s.snapshot()[0]?.metadata ?? {}
  const close = async (): Promise<void> => { detach(); lifecycle.beginClose('test over'); await lifecycle.stopped(); await s.close() }
  return { s, clock, registry, lifecycle, onServer, close }
}

test('weightRamp: registers at the first step, then PUT .../metadata?weight= per step up to the full weight', async () => {
  const { clock, registry, lifecycle, onServer, close } = await setup()
  try {
    await lifecycle.start(base)
    assert.equal(onServer().weight, '5')
    assert.equal(onServer().warmup, '0', "Dubbo's warmup: the weight is ramped already")
    assert.equal(onServer()['lameduck.weight'], '100')
    assert.equal(onServer()['lameduck.warmup'], '20000')
    for (const expected of ['15', '25', '35']) {
      await clock.advance(2_000)
      await until(() => onServer().weight === expected, `weight ${expected} on the server`)
    }
    await clock.advance(20_000)
    await until(() => onServer().weight === '100', 'the full weight on the server')
    assert.equal((registry.describe().weightRamp as { done: boolean }).done, true)
  } finally {
    await close()
  }
})

test('weightRamp: a re-registration after a 404 (operator DELETE, server restart) carries the weight reached, not the first step', async () => {
  const { s, clock, lifecycle, onServer, close } = await setup()
  try {
    await lifecycle.start(base)
    await clock.advance(4_000)
    await until(() => onServer().weight === '25', 'weight 25')
    await fetch(`${s.url}/apps/ORDERS/o1`, { method: 'DELETE' })
    assert.equal(s.snapshot().length, 0)
    await clock.advance(1_000) // the heartbeat gets 404 and registers again
    await until(() => s.snapshot().length === 1, 'registered again after the 404')
    assert.equal(onServer().weight, '25')
  } finally {
    await close()
  }
})

test('weightRamp: nothing is republished while draining (OUT_OF_SERVICE keeps the instance visible)', async () => {
  const { clock, lifecycle, onServer, s, close } = await setup('out-of-service')
  try {
    await lifecycle.start(base)
    await clock.advance(2_000)
    await until(() => onServer().weight === '15', 'weight 15')
    const offline = lifecycle.offline('test')
    await until(() => s.snapshot()[0]?.status === 'OUT_OF_SERVICE', 'OUT_OF_SERVICE')
    for (let i = 0; i < 8; i++) await clock.advance(1_000)
    assert.equal(onServer().weight, '15', 'the weight stays where the drain found it')
    await clock.advance(30_000)
    await offline
    assert.equal(onServer().weight, '15')
  } finally {
    await close()
  }
})
