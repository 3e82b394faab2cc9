// 18.6: what a Java consumer sees of lameduck's warmup. Spring Cloud LoadBalancer's weighted
// supplier (spring.cloud.loadbalancer.configurations=weighted) reads the instance metadata key
// `weight` (Integer.parseInt, positive, else 1) from the instances it has cached. lameduck
// publishes Dubbo's `weight` = the configured weight (100) from the first second, so a new
// instance gets its full share at once: Spring cannot read `warmup`/`timestamp`. A provider that
// published a *ramping* `weight` (here: PUT .../metadata?weight=N, the Eureka server's own API)
// would be ramped, but only as fast as the metadata crosses the server cache, the client fetch
// and the LoadBalancer cache. Both are measured here against the real server and consumer.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { eurekaWindows } from '@lameduck/eureka'
import { until as pollUntil } from '@lameduck/test-utils'
import { propagationWindow } from '@lameduck/core'
import { startJavaConsumer, startRealEureka, type JavaConsumer, type RealEureka } from './helpers/eureka.ts'
import { startProvider, type Provider } from './helpers/providers.ts'
import { scaled } from './helpers/propagation.ts'

const S = scaled(0.1)
const WINDOWS = eurekaWindows({ responseCacheUpdateIntervalMs: S.responseCacheUpdateIntervalMs, registryFetchIntervalMs: S.registryFetchIntervalSeconds * 1_000, balancer: S.loadBalancerCacheTtlMs })
const WINDOW_MS = propagationWindow(WINDOWS).totalMs
/** lameduck's default warmup (120 s) at the same scale, and the ramp's steps. */
const WARMUP_MS = 12_000
const STEPS = [1, 25, 50, 75, 100]
const BUCKET_MS = 2_000
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

let server: RealEureka
let consumer: JavaConsumer
const warm: Provider[] = []

before(async () => {
  server = await startRealEureka({ responseCacheUpdateIntervalMs: S.responseCacheUpdateIntervalMs })
  for (let i = 0; i < 2; i++) warm.push(await providerAt(100))
  consumer = await startJavaConsumer({ eurekaUrl: server.eurekaUrl, registryFetchIntervalSeconds: S.registryFetchIntervalSeconds, cacheTtlMs: S.loadBalancerCacheTtlMs, configurations: 'weighted', name: 'java-weighted' })
  await consumer.load(true)
  // Both warm instances in rotation before anything joins.
  for (const p of warm) await until(() => consumer.calls.some((c) => c.instance === p.id), `the consumer to route to ${p.id}`)
})

after(async () => {
  await consumer?.load(false).catch(() => {})
  await consumer?.stop()
  await Promise.all(warm.map((p) => p.close()))
  await server?.stop()
})

function providerAt (weight: number): Promise<Provider> {
  return startProvider({ eurekaUrl: server.eurekaUrl, heartbeatIntervalMs: S.heartbeatIntervalMs, leaseDurationSecs: S.leaseDurationSecs, windows: WINDOWS, warmupMs: WARMUP_MS, weight })
}

async function until (fn: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  await pollUntil(fn, what, { timeoutMs, intervalMs: 50 })
}

/** The newcomer's share of the consumer's requests per bucket, from its first request on. */
async function shares (p: Provider, ramp: (() => Promise<void>) | undefined): Promise<number[]> {
  await until(() => consumer.calls.some((c) => c.instance === p.id), `the consumer to route to ${p.id}`)
  const first = consumer.calls.find((c) => c.instance === p.id)!.t
  await Promise.all([ramp?.(), sleep(WARMUP_MS + WINDOW_MS)])
  const end = Date.now()
  const out: number[] = []
  for (let from = first; from + BUCKET_MS <= end; from += BUCKET_MS) {
    const inBucket = consumer.calls.filter((c) => c.t >= from && c.t < from + BUCKET_MS && c.status === 200)
    out.push(inBucket.length === 0 ? 0 : Math.round(100 * inBucket.filter((c) => c.instance === p.id).length / inBucket.length))
  }
  await p.app.lameduck.offline()
  await p.close()
  return out
}

test('Spring Cloud LoadBalancer (weighted) reads `weight`: lameduck\'s static weight gives no ramp; a ramping weight ramps, one propagation window late', { timeout: 300_000 }, async (t) => {
  t.diagnostic(`propagation window ${WINDOW_MS} ms (${WINDOWS.serverCacheMs} + ${WINDOWS.clientFetchMs} + ${WINDOWS.balancerRefreshMs}); warmup ${WARMUP_MS} ms; share of the newcomer per ${BUCKET_MS} ms bucket, % of requests`)

  // As lameduck publishes today: weight 100 from the start (warmup only in lameduck.warmup / warmup).
  const flat = await providerAt(100)
  const published = (await (await fetch(`${server.eurekaUrl}/apps/ORDERS/${flat.id}`, { headers: { accept: 'application/json' } })).json() as any).instance.metadata
  t.diagnostic(`published metadata: ${JSON.stringify(published)}`)
  assert.equal(published.weight, '100', 'lameduck publishes Dubbo\'s `weight`, the key Spring\'s weighted supplier reads')
  const flatShares = await shares(flat, undefined)
  t.diagnostic(`static weight 100 (lameduck today): ${flatShares.join(' ')}`)

  // A ramping weight: the provider starts at 1 and raises `weight` in steps over the warmup.
  const ramped = await providerAt(STEPS[0]!)
  const ramp = async (): Promise<void> => {
    for (const w of STEPS.slice(1)) {
      await sleep(WARMUP_MS / (STEPS.length - 1))
      const res = await fetch(`${server.eurekaUrl}/apps/ORDERS/${ramped.id}/metadata?weight=${w}`, { method: 'PUT' })
      assert.equal(res.status, 200)
    }
  }
  const rampShares = await shares(ramped, ramp)
  t.diagnostic(`ramping weight ${STEPS.join('→')} every ${WARMUP_MS / (STEPS.length - 1)} ms: ${rampShares.join(' ')}`)

  // The static weight: a full third of the traffic from the first bucket (no ramp at all).
  assert.ok(flatShares[0]! >= 20, `static weight: the newcomer gets its full share at once (${flatShares[0]}%)`)
  // The ramp is honoured: weight 1 of 201 at first, the full share at the end.
  assert.ok(rampShares[0]! <= 5, `ramping weight: a small share first (${rampShares[0]}%)`)
  assert.ok(rampShares.at(-1)! >= 20, `ramping weight: the full share once the last step has propagated (${rampShares.at(-1)}%)`)
})
