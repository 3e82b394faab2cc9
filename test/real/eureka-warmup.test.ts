// Issue 30 item 4: warmup for a consumer that reads only a weight. Spring Cloud LoadBalancer's
// weighted supplier (spring.cloud.loadbalancer.configurations=weighted) reads the metadata key
// `weight` (Integer.parseInt, positive, else 1) from the instances it has cached, and cannot read
// `warmup`/`timestamp`. lameduck publishes Dubbo's `weight` = the configured weight, so without the
// ramp a new instance gets its full share at once (the negative control). With the Eureka adapter's
// `weightRamp`, the provider registers at a low `weight` and raises it by PUT .../metadata, a step
// per consumer refresh: the Java consumer's share follows the curve, one propagation window late
// at most. A Node consumer on @lameduck/balancer ramps from lameduck.warmup itself and must not
// multiply its ramp by the ramping `weight`. Real Eureka server, real Spring consumer, scaled
// periods: server cache 1 s, client fetch 1 s, LoadBalancer cache 1 s (window 3 s), warmup 20 s.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { createBalancer, type Balancer } from '@lameduck/balancer'
import { propagationWindow, weightRampSchedule, linearWarmupWeight } from '@lameduck/core'
import { eurekaDiscovery, eurekaWindows, type EurekaDiscovery } from '@lameduck/eureka'
import { until as pollUntil } from '@lameduck/test-utils'
import { startJavaConsumer, startRealEureka, waitFor, type JavaConsumer, type RealEureka } from './helpers/eureka.ts'
import { startProvider, type Provider } from './helpers/providers.ts'
import { fitShares, pct, publishedAt, type Call } from './helpers/ramp-fit.ts'

const CACHE_MS = 1_000
const FETCH_S = 1
const LB_TTL_MS = 1_000
const WINDOWS = eurekaWindows({ responseCacheUpdateIntervalMs: CACHE_MS, registryFetchIntervalMs: FETCH_S * 1_000, balancer: LB_TTL_MS })
const WINDOW_MS = propagationWindow(WINDOWS).totalMs
/** Timer lateness on a loaded machine, added to the lag the envelope allows. */
const LAG_MARGIN_MS = 500
const WARMUP_MS = 20_000
const BUCKET_MS = 2_000
/** Two warm instances at weight 100: the newcomer's full share is 1/3. */
const share = (w: number): number => w <= 0 ? 0 : w / (w + 200)
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

let server: RealEureka
let java: JavaConsumer
let discovery: EurekaDiscovery
let balancer: Balancer
const warm: Provider[] = []
const nodeCalls: Call[] = []
/** When the Node balancer first listed each instance (epoch ms). */
const nodeSeen = new Map<string, number>()
const loop = { running: true, done: Promise.resolve() }

/** How long each step of the setup took (ms), reported by the first test: a slow JVM start is then visible, not a bare timeout. */
const setup: string[] = []
async function step<T> (what: string, fn: () => Promise<T>): Promise<T> {
  const started = Date.now()
  try {
    return await fn()
  } finally {
    setup.push(`${what} ${Date.now() - started} ms`)
  }
}

// Its own bound, above the runner's 180 s default: two JVM starts and the first routes take minutes on a loaded machine.
before(async () => {
  server = await step('Eureka server', () => startRealEureka({ responseCacheUpdateIntervalMs: CACHE_MS }))
  for (let i = 0; i < 2; i++) warm.push(await step(`warm provider ${i + 1}`, () => providerAt(0, false)))
  java = await step('Spring consumer', () => startJavaConsumer({ eurekaUrl: server.eurekaUrl, registryFetchIntervalSeconds: FETCH_S, cacheTtlMs: LB_TTL_MS, configurations: 'weighted', name: 'java-weighted', intervalMs: 5 }))
  await java.load(true)
  discovery = eurekaDiscovery({ url: server.eurekaUrl, client: { eureka: { registryFetchInterval: FETCH_S * 1_000 } } })
  balancer = createBalancer({ service: 'orders', discovery, refreshIntervalMs: FETCH_S * 1_000, curve: 'linear', consumerId: 'node-weighted' })
  loop.done = nodeLoop()
  await step('first routes to both warm instances', async () => {
    for (const p of warm) {
      await waitFor(() => java.calls.some((c) => c.instance === p.id), `the Java consumer to route to ${p.id} (setup so far: ${setup.join(', ')})`, java, 150_000)
      await until(() => nodeCalls.some((c) => c.instance === p.id), `the Node balancer to route to ${p.id}`, 60_000)
    }
  })
}, { timeout: 600_000 })

after(async () => {
  loop.running = false
  await loop.done
  await java?.load(false).catch(() => {})
  await java?.stop()
  await balancer?.close()
  await discovery?.close()
  await Promise.all(warm.map((p) => p.close()))
  await server?.stop()
})

/** The Node consumer: a request every 10 ms through @lameduck/balancer, and when it first listed each instance. */
async function nodeLoop (): Promise<void> {
  while (loop.running) {
    const now = Date.now()
    for (const i of balancer.stats().services[0]?.instances ?? []) if (!nodeSeen.has(i.id)) nodeSeen.set(i.id, now)
    const call: Call = { t: now, instance: null, status: 0 }
    try {
      const res = await request('http://orders/hello', { dispatcher: balancer, headersTimeout: 5_000 })
      await res.body.dump()
      call.status = res.statusCode
      call.instance = String(res.headers['x-instance'] ?? '')
    } catch { /* no instance yet, or a refused connect: not counted */ }
    nodeCalls.push(call)
    await sleep(10)
  }
}

function providerAt (warmupMs: number, weightRamp: boolean): Promise<Provider> {
  return startProvider({ eurekaUrl: server.eurekaUrl, heartbeatIntervalMs: 3_000, leaseDurationSecs: 10, windows: WINDOWS, warmupMs, weight: 100, weightRamp })
}

async function until (fn: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  await pollUntil(fn, what, { timeoutMs, intervalMs: 50 })
}

async function leave (p: Provider): Promise<void> {
  await p.app.lameduck.offline()
  await p.close()
}

test('negative control: without weightRamp the Spring weighted consumer gives a new instance its full share at once', { timeout: 120_000 }, async (t) => {
  t.diagnostic(`setup: ${setup.join(', ')}`)
  const flat = await providerAt(WARMUP_MS, false)
  await until(() => java.calls.some((c) => c.instance === flat.id), `the Java consumer to route to ${flat.id}`)
  const first = java.calls.find((c) => c.instance === flat.id)!.t
  await sleep(2 * BUCKET_MS)
  const inFirst = java.calls.filter((c) => c.t >= first && c.t < first + BUCKET_MS && c.status === 200)
  const firstShare = inFirst.filter((c) => c.instance === flat.id).length / inFirst.length
  t.diagnostic(`no ramp: the newcomer's share in its first ${BUCKET_MS} ms at the Java consumer: ${pct(firstShare)} % (full share 33.3 %)`)
  assert.ok(firstShare >= 0.25, `the full share at once without the ramp (${pct(firstShare)} %)`)
  await leave(flat)
})

test('weightRamp: the Spring weighted consumer\'s share follows the ramp within one window; the Node balancer ramps once', { timeout: 180_000 }, async (t) => {
  const ramped = await providerAt(WARMUP_MS, true)
  const registeredAt = ramped.app.lameduck.status().registeredAt!
  const schedule = weightRampSchedule({ warmupMs: WARMUP_MS, weight: 100, window: WINDOWS })
  t.diagnostic(`window ${WINDOW_MS} ms (server cache ${CACHE_MS} + fetch ${FETCH_S * 1_000} + LoadBalancer cache ${LB_TTL_MS}); warmup ${WARMUP_MS} ms; ramp ${schedule.steps.map((s) => s.weight).join(' ')}, a step every ${schedule.stepMs} ms`)
  const durationMs = WARMUP_MS + WINDOW_MS + 2 * BUCKET_MS
  await sleep(registeredAt + durationMs - Date.now())
  const onServer = (await (await fetch(`${server.eurekaUrl}/apps/ORDERS/${ramped.id}`, { headers: { accept: 'application/json' } })).json() as { instance: { metadata: Record<string, string> } }).instance.metadata
  assert.equal(onServer.weight, '100', 'the ramp ends at the full weight')
  assert.equal(onServer['lameduck.weight'], '100')

  // The Java consumer: the published curve, seen 0 … window (+ timer margin) late.
  const javaFit = fitShares({ calls: java.calls, instance: ramped.id, startAt: registeredAt, durationMs, bucketMs: BUCKET_MS, lagMaxMs: WINDOW_MS + LAG_MARGIN_MS, expected: (ms) => share(publishedAt(schedule, ms)) })
  t.diagnostic(`Java (Spring weighted), per ${BUCKET_MS} ms from registration, measured % [envelope]: ${javaFit.buckets.map((b) => `${pct(b.share)} [${pct(b.lo)}–${pct(b.hi)}]`).join(', ')}`)
  t.diagnostic(`Java: largest excursion outside the envelope ${pct(javaFit.maxOutside)} points; best single lag ${javaFit.bestLagMs} ms, error at it RMS ${pct(javaFit.rmsAtBestLag)} / max ${pct(javaFit.maxAtBestLag)} points; ${javaFit.buckets.map((b) => b.requests).join('/')} requests per bucket`)
  assert.ok(javaFit.buckets[0]!.share <= 0.05, `a small share first (${pct(javaFit.buckets[0]!.share)} %)`)
  assert.ok(javaFit.buckets.at(-1)!.share >= 0.28, `the full share once the last step propagated (${pct(javaFit.buckets.at(-1)!.share)} %)`)
  assert.ok(javaFit.maxOutside <= 0.05, `every bucket within 5 points of the envelope (worst ${pct(javaFit.maxOutside)})`)
  assert.ok(javaFit.rmsAtBestLag <= 0.03, `the curve at one lag within 3 points RMS (${pct(javaFit.rmsAtBestLag)})`)

  // The Node balancer: its own linear ramp over lameduck.weight from when it listed the instance, not × the ramping weight.
  const seen = nodeSeen.get(ramped.id)!
  const own = (ms: number): number => share(ms < 0 ? 0 : linearWarmupWeight(ms, WARMUP_MS, 100))
  const twice = (ms: number): number => share(ms < 0 ? 0 : linearWarmupWeight(ms, WARMUP_MS, 100) * publishedAt(schedule, ms + seen - registeredAt) / 100)
  const nodeFit = fitShares({ calls: nodeCalls, instance: ramped.id, startAt: seen, durationMs: WARMUP_MS, bucketMs: BUCKET_MS, lagMaxMs: 0, expected: own })
  const twiceFit = fitShares({ calls: nodeCalls, instance: ramped.id, startAt: seen, durationMs: WARMUP_MS, bucketMs: BUCKET_MS, lagMaxMs: 0, expected: twice })
  t.diagnostic(`Node (@lameduck/balancer), per ${BUCKET_MS} ms from first listing (${seen - registeredAt} ms after registration), measured % [own ramp]: ${nodeFit.buckets.map((b) => `${pct(b.share)} [${pct(b.hi)}]`).join(', ')}`)
  t.diagnostic(`Node: error against its own ramp RMS ${pct(nodeFit.rmsAtBestLag)} / max ${pct(nodeFit.maxAtBestLag)} points; against own × ramping weight RMS ${pct(twiceFit.rmsAtBestLag)} / max ${pct(twiceFit.maxAtBestLag)}`)
  assert.ok(nodeFit.maxAtBestLag <= 0.05, `the Node share follows its own ramp within 5 points (worst ${pct(nodeFit.maxAtBestLag)})`)
  assert.ok(twiceFit.maxAtBestLag > 2 * nodeFit.maxAtBestLag && twiceFit.maxAtBestLag > 0.05, 'and is not the twice-ramped curve')
  await leave(ramped)
})
