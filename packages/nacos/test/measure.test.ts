// Measures "deregister → a consumer stops seeing the instance" through the
// adapter on both sides, with push on (Nacos 2.x defaults) and push off
// (polling, cacheMillis scaled down), against the window nacosWindows() computes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { propagationWindow } from '@lameduck/core'
import { startNacos } from '@lameduck/devkit'
import { nacosDiscovery, nacosRegistry, nacosWindows } from '@lameduck/nacos'
import { instance, waitFor } from './helpers.ts'
import { prng } from '@lameduck/test-utils'

/** Seeded: the same phases every run, so a failure replays. */
const random = prng(0x1a3ed0c)

/** Times for `trials` deregistrations of one of two instances, then for the last one. */
async function measure (server: Awaited<ReturnType<typeof startNacos>>, trials: number, jitterMs: number): Promise<{ ms: number[], lastMs: number }> {
  const provider = nacosRegistry({ serverList: server.serverList })
  const consumer = nacosDiscovery({ serverList: server.serverList })
  try {
    await provider.register(instance(3000))
    const leaving = instance(3001)
    let gone: number | null = null
    let watched = 3001
    consumer.subscribe('orders', (list) => { if (gone === null && !list.some((i) => i.port === watched)) gone = Date.now() })
    // Past the SDK's extra poll 1 s after subscribing: from then on it polls every cacheMillis.
    await waitFor('the first scheduled poll', () => (consumer.describe().discovery as { updates: { polls: number } }).updates.polls >= 2, 3_000)
    const results: number[] = []
    for (let i = 0; i < trials; i++) {
      await provider.register(leaving)
      await waitFor('the consumer to see the instance', () => consumer.instances('orders').length === 2, server.options.cacheMillis + 3_000)
      // Vary the moment of the deregistration against the consumer's poll rhythm.
      await new Promise((resolve) => setTimeout(resolve, 100 + random.next() * jitterMs))
      gone = null
      await provider.deregister(leaving)
      // The lifecycle's window starts when deregister() has resolved.
      const deregisteredAt = Date.now()
      await waitFor('the consumer to stop seeing it', () => gone !== null, server.options.cacheMillis + 3_000)
      results.push(gone! - deregisteredAt)
    }
    // The last instance of the service: the SDK alone would never drop it.
    watched = 3000
    gone = null
    await provider.deregister(instance(3000))
    const deregisteredAt = Date.now()
    await waitFor('the consumer to see the service empty', () => gone !== null, server.options.cacheMillis + 3_000)
    assert.deepEqual(consumer.instances('orders'), [])
    return { ms: results, lastMs: gone! - deregisteredAt }
  } finally {
    await provider.close()
    await consumer.close()
  }
}

const summary = (ms: number[]): string => `max ${Math.max(...ms)} ms, mean ${Math.round(ms.reduce((a, b) => a + b, 0) / ms.length)} ms (${ms.join(', ')})`

test('push on (500 ms push delay, 10 s cacheMillis): the consumer stops seeing it within the push delay, far inside the window', async (t) => {
  const server = await startNacos({ pushDelayMs: 500, cacheMillis: 10_000 })
  t.after(() => server.close())
  const window = propagationWindow(nacosWindows({ pushDelayMs: 500, cacheMillis: 10_000 }))
  const { ms, lastMs } = await measure(server, 5, 300)
  t.diagnostic(`push on: deregister → consumer ${summary(ms)}; last instance ${lastMs} ms; computed window ${window.totalMs} ms`)
  for (const m of [...ms, lastMs]) {
    assert.ok(m <= 500 + 300, `${m} ms: the push delay (500) plus a little (a poll may come first)`)
    assert.ok(m <= window.totalMs)
  }
})

test('push off (cacheMillis scaled to 1500 ms): the consumer stops seeing it within one poll period, inside the window', async (t) => {
  const server = await startNacos({ push: false, cacheMillis: 1_500 })
  t.after(() => server.close())
  // The window for this server: push delay 500, poll 1500, margin 300 (the poll timer
  // restarts after each answer, so a period is cacheMillis + request time).
  const window = propagationWindow(nacosWindows({ pushDelayMs: 500, cacheMillis: 1_500, marginMs: 300 }))
  const { ms, lastMs } = await measure(server, 3, 750)
  t.diagnostic(`push off: deregister → consumer ${summary(ms)}; last instance ${lastMs} ms; computed window ${window.totalMs} ms`)
  for (const m of [...ms, lastMs]) assert.ok(m <= 1_500 + 300, `${m} ms: within cacheMillis + margin`)
  assert.ok(Math.max(...ms, lastMs) <= window.totalMs)
})
