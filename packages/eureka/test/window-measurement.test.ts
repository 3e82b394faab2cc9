// Measures "DELETE → consumer stops seeing the instance" with scaled intervals
// against the window eurekaWindows() computes. The consumer is the plain
// eureka-js-client (what a Node service without lameduck runs), next to the
// adapter's own discovery.
import { test } from 'node:test'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import assert from 'node:assert/strict'
import { propagationWindow } from '@lameduck/core'
import { startEureka } from '@lameduck/devkit'
import { eurekaDiscovery, eurekaRegistry, eurekaWindows } from '@lameduck/eureka'
import { cb, Eureka, HERE, instance, quiet, sleep, until } from './helpers.ts'
import { prng } from '@lameduck/test-utils'

/** Seeded: the same phases every run, so a failure replays. */
const random = prng(0x1a3ed0c)

const SERVER_CACHE_MS = 300
const CLIENT_FETCH_MS = 300
/** Request latency and timer jitter; the event loop's own measured delay is added on top. */
const TOLERANCE_MS = 100
/** Steps of a drop that wait on the event loop; each may be late by its measured worst delay. */
const LATE_STEPS = 3
const ROUNDS = 8

function summary (ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)]!
  return `min ${sorted[0]} / median ${median} / max ${sorted.at(-1)} ms over ${ms.length} rounds`
}

interface Variant { mode: 'delete' | 'out-of-service', readOnly: boolean }

async function measure (t: { diagnostic(msg: string): void }, { mode, readOnly }: Variant): Promise<void> {
  const window = propagationWindow(eurekaWindows({ responseCacheUpdateIntervalMs: SERVER_CACHE_MS, useReadOnlyCache: readOnly, registryFetchIntervalMs: CLIENT_FETCH_MS, balancer: 'none' }))
  const s = await startEureka({ responseCacheUpdateIntervalMs: SERVER_CACHE_MS, useReadOnlyCache: readOnly })
  const registry = eurekaRegistry({ url: s.url, offlineMode: mode, client: { eureka: { heartbeatInterval: 1_000 } } })
  const measured: { plain: number[], adapter: number[] } = { plain: [], adapter: [] }
  // Timers fire late when the machine is busy (other test files run in parallel): that lag
  // delays every hop of the window alike, so it is measured and allowed for.
  const lag = monitorEventLoopDelay({ resolution: 5 })
  lag.enable()
  const allowed: number[] = []
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const i = instance('p1', 3001)
      await registry.register(i)
      // Fresh consumers each round, started at random phases against the server's cache timer.
      await sleep(random.next() * CLIENT_FETCH_MS)
      const plain = new Eureka({ cwd: HERE, logger: quiet, eureka: { serviceUrls: { default: [s.serviceUrl] }, registerWithEureka: false, registryFetchInterval: CLIENT_FETCH_MS } })
      await cb((done) => plain.start(done))
      await sleep(random.next() * CLIENT_FETCH_MS)
      const discovery = eurekaDiscovery({ url: s.url, client: { eureka: { registryFetchInterval: CLIENT_FETCH_MS } } })
      const plainSees = (): boolean => (plain.cache.app.ORDERS ?? []).some((x: { instanceId: string }) => x.instanceId === 'p1')
      const adapterSees = (): boolean => discovery.instances('orders').some((x) => x.id === 'p1')
      try {
        await until(() => plainSees() && adapterSees(), 'both consumers to see the instance', { timeoutMs: 3_000, intervalMs: 5 })
        await sleep(random.next() * SERVER_CACHE_MS)
        lag.reset()
        const t0 = Date.now()
        await registry.deregister(i)
        const gone: Partial<Record<'plain' | 'adapter', number>> = {}
        await until(() => {
          if (gone.plain === undefined && !plainSees()) gone.plain = Date.now() - t0
          if (gone.adapter === undefined && !adapterSees()) gone.adapter = Date.now() - t0
          return gone.plain !== undefined && gone.adapter !== undefined
        }, 'both consumers to drop the instance', window.totalMs + 2_000, 5)
        measured.plain.push(gone.plain!)
        measured.adapter.push(gone.adapter!)
        // Three steps wait on this event loop (the fetch timer, the fetch's request, its answer
        // parsed), each as late as its worst delay on a busy machine.
        allowed.push(window.totalMs + TOLERANCE_MS + LATE_STEPS * Math.round(lag.max / 1e6))
      } finally {
        await cb((done) => plain.stop(done))
        await discovery.close()
      }
    }
  } finally {
    lag.disable()
    await registry.close()
    await s.close()
  }
  t.diagnostic(`${mode}, read-only cache ${readOnly ? 'on' : 'off'}: window ${window.totalMs} ms (${window.breakdown.map((b) => `${b.part} ${b.ms}`).join(' + ')})`)
  t.diagnostic(`  eureka-js-client consumer: ${summary(measured.plain)}`)
  t.diagnostic(`  lameduck eurekaDiscovery:  ${summary(measured.adapter)}`)
  t.diagnostic(`  allowed per round (window + ${TOLERANCE_MS} ms + ${LATE_STEPS} x event-loop lag): ${allowed.join(', ')} ms`)
  for (let n = 0; n < allowed.length; n++) {
    for (const ms of [measured.plain[n]!, measured.adapter[n]!]) {
      assert.ok(ms <= allowed[n]!, `round ${n}: dropped after ${ms} ms, window ${window.totalMs} ms, allowed ${allowed[n]} ms`)
    }
  }
}

test('DELETE / OUT_OF_SERVICE → consumers stop seeing the instance within the computed window', { concurrency: 4 }, async (t) => {
  const variants: Variant[] = [
    { mode: 'delete', readOnly: true },
    { mode: 'delete', readOnly: false },
    { mode: 'out-of-service', readOnly: true },
    { mode: 'out-of-service', readOnly: false }
  ]
  await Promise.all(variants.map((v) => t.test(`${v.mode}, read-only cache ${v.readOnly ? 'on' : 'off'}`, (st) => measure(st, v))))
})
