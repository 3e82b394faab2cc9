// Issue 30 item 4 on real Nacos 2.3.1: the Java client's own weighted pick
// (selectOneHealthyInstance, weighted random over the Nacos instance weight, gRPC push) gives a new
// lameduck instance its full share at once unless the provider ramps the Nacos weight
// (@lameduck/nacos `weightRamp`): then the share follows the published curve, at most the push
// term late. Providers are Fastify apps with the lameduck plugin, which attaches the adapter's ramp.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import Fastify, { type FastifyInstance } from 'fastify'
import lameduck from '@lameduck/fastify'
import { weightRampSchedule } from '@lameduck/core'
import { nacosRegistry, nacosWindows } from '@lameduck/nacos'
import { until } from '@lameduck/test-utils'
import { startJavaConsumer, type JavaConsumer } from './helpers/nacos-consumer.ts'
import { realTestOptions, startModernNacos, type ModernNacos } from './helpers/nacos-modern.ts'
import { fitShares, pct, publishedAt, type Call } from './helpers/ramp-fit.ts'

const SERVICE = 'orders'
const WINDOWS = nacosWindows()
/** A consumer on push sees a change after the push term; the poll (10 s) is the fallback. */
const PUSH_TERM_MS = WINDOWS.serverCacheMs + WINDOWS.marginMs
const LAG_MARGIN_MS = 500
const WARMUP_MS = 20_000
const STEP_MS = 1_000
const BUCKET_MS = 2_000
const share = (w: number): number => w <= 0 ? 0 : w / (w + 200)
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

let server: ModernNacos
let java: JavaConsumer
const warm: FastifyInstance[] = []

async function provider (warmupMs: number, weightRamp: false | { stepMs: number }): Promise<{ app: FastifyInstance, port: number }> {
  const app = Fastify()
  app.get('/work', async () => ({ ok: true }))
  await app.register(lameduck, {
    service: SERVICE,
    host: '127.0.0.1',
    registry: nacosRegistry({ serverList: server.serverList, beatIntervalMs: 2_000, weightRamp }),
    warmupMs,
    weight: 100,
    windows: WINDOWS,
    maxRequestMs: 2_000,
    admin: false,
    signals: false,
    routes: false
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  await until(() => app.lameduck.state === 'serving', 'the provider to register')
  return { app, port: (app.server.address() as { port: number }).port }
}

const calls = (): Call[] => java.requests.map((r) => ({ t: r.t, instance: String(r.port), status: r.status }))

before(async () => {
  server = await startModernNacos('2.3.1')
  for (let i = 0; i < 2; i++) warm.push((await provider(0, false)).app)
  java = await startJavaConsumer(server.serverList, SERVICE, { pick: 'weighted' })
  await until(() => java.ports().length === 2, 'the Java consumer to list both warm instances', { timeoutMs: 60_000 })
}, { timeout: 600_000 }) // above the runner's 180 s default: two JVM starts on a loaded machine; each step has its own bound

after(async () => {
  await java?.close()
  await Promise.all(warm.map((a) => a.close()))
  await server?.close()
})

test('real Nacos 2.3.1, negative control: without weightRamp the Java client\'s weighted pick gives a new instance its full share at once', { ...realTestOptions(), timeout: 120_000 }, async (t) => {
  const flat = await provider(WARMUP_MS, false)
  await until(() => java.requests.some((r) => r.port === flat.port), 'the Java consumer to call the newcomer', { timeoutMs: 30_000 })
  const first = java.requests.find((r) => r.port === flat.port)!.t
  await sleep(BUCKET_MS + 200)
  const inFirst = java.requests.filter((r) => r.t >= first && r.t < first + BUCKET_MS && r.status === 200)
  const firstShare = inFirst.filter((r) => r.port === flat.port).length / inFirst.length
  t.diagnostic(`no ramp: the newcomer's share in its first ${BUCKET_MS} ms: ${pct(firstShare)} % of ${inFirst.length} requests (full share 33.3 %)`)
  assert.ok(firstShare >= 0.25, `the full share at once without the ramp (${pct(firstShare)} %)`)
  await flat.app.close()
  await until(() => java.ports().length === 2, 'the newcomer gone from the Java consumer', { timeoutMs: 30_000 })
})

test('real Nacos 2.3.1, weightRamp: the Java client\'s weighted pick follows the ramped Nacos weight within the push term', { ...realTestOptions(), timeout: 180_000 }, async (t) => {
  const ramped = await provider(WARMUP_MS, { stepMs: STEP_MS })
  const registeredAt = ramped.app.lameduck.status().registeredAt!
  const schedule = weightRampSchedule({ warmupMs: WARMUP_MS, weight: 100, window: WINDOWS, stepMs: STEP_MS })
  t.diagnostic(`push term ${PUSH_TERM_MS} ms; warmup ${WARMUP_MS} ms; Nacos weight ${schedule.steps.map((s) => s.weight).join(' ')}, a step every ${schedule.stepMs} ms`)
  const durationMs = WARMUP_MS + 2 * BUCKET_MS
  await sleep(registeredAt + durationMs - Date.now())
  const listed = JSON.parse((await server.call('GET', '/v1/ns/instance/list', { serviceName: SERVICE })).text) as { hosts: Array<{ port: number, weight: number, metadata: Record<string, string> }> }
  const held = listed.hosts.find((h) => h.port === ramped.port)!
  assert.equal(held.weight, 100, 'the ramp ends at the full weight')
  assert.equal(held.metadata['lameduck.weight'], '100')
  const fit = fitShares({ calls: calls(), instance: String(ramped.port), startAt: registeredAt, durationMs, bucketMs: BUCKET_MS, lagMaxMs: PUSH_TERM_MS + LAG_MARGIN_MS, expected: (ms) => share(publishedAt(schedule, ms)) })
  t.diagnostic(`Java (selectOneHealthyInstance), per ${BUCKET_MS} ms from registration, measured % [envelope]: ${fit.buckets.map((b) => `${pct(b.share)} [${pct(b.lo)}–${pct(b.hi)}]`).join(', ')}`)
  t.diagnostic(`largest excursion outside the envelope ${pct(fit.maxOutside)} points; best single lag ${fit.bestLagMs} ms, error at it RMS ${pct(fit.rmsAtBestLag)} / max ${pct(fit.maxAtBestLag)} points; ${fit.buckets.map((b) => b.requests).join('/')} requests per bucket`)
  assert.ok(fit.buckets[0]!.share <= 0.06, `a small share first (${pct(fit.buckets[0]!.share)} %)`)
  assert.ok(fit.buckets.at(-1)!.share >= 0.27, `the full share at the end (${pct(fit.buckets.at(-1)!.share)} %)`)
  // Weighted random: a bucket's share carries sampling noise, about 2 points (1 SD) at ~450 requests
  // and a third: bounds of ~3.5 SD for the worst of 12 buckets, and 4 points RMS.
  assert.ok(fit.maxOutside <= 0.08, `every bucket within 8 points of the envelope (worst ${pct(fit.maxOutside)})`)
  assert.ok(fit.rmsAtBestLag <= 0.04, `the curve at one lag within 4 points RMS (${pct(fit.rmsAtBestLag)})`)
  await ramped.app.close()
})
