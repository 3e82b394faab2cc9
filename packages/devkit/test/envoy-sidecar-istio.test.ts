// envoySidecar()'s drain step (@lameduck/envoy) against the local Envoy in its Istio
// modes. Istio counts every listener, so the app's own outbound connections (to its
// registry) would keep the count above 0; and without EXIT_ON_ZERO_ACTIVE_CONNECTIONS the
// count is unavailable. In neither case may the step poll until drainTimeoutMs.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { silentLogger, systemClock } from '@lameduck/core'
import { drainEnvoy, ENVOY_ERROR_CODES, envoyAdmin, EnvoyAdminError, envoySidecar, type EnvoySidecarOptions } from '@lameduck/envoy'
import { Client } from 'undici'
import { envoyFor, openConnections, startApp, waitFor, type Ctx } from './envoy-helpers.ts'

const DRAIN_TIMEOUT_MS = 4_000

async function drainStep (t: Ctx, options: EnvoySidecarOptions): Promise<{ problems: unknown[], tookMs: number }> {
  const sidecar = envoySidecar({ checkIntervalMs: 20, drainTimeoutMs: DRAIN_TIMEOUT_MS, ...options })
  t.after(() => sidecar.close())
  const problems: unknown[] = []
  const started = Date.now()
  await sidecar.afterWindow[0]!.run({ signal: new AbortController().signal, clock: systemClock, logger: silentLogger, problem: (err) => problems.push(err) })
  return { problems, tookMs: Date.now() - started }
}

const codes = (problems: unknown[]): string[] => problems.map((p) => p instanceof EnvoyAdminError ? p.code : String(p))

test('Istio with EXIT_ON_ZERO_ACTIVE_CONNECTIONS: the app\'s outbound registry connection does not hold the drain', async (t) => {
  const registry = await startApp()
  t.after(() => registry.close())
  const { envoy } = await envoyFor(t, { istio: { exitOnZeroActiveConnections: true }, outbound: registry.url, drainTimeMs: 300 })
  const inbound = await openConnections(envoy.url, 2)
  const outbound = new Client(envoy.outboundUrl!, { keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 })
  t.after(async () => { if (!closed) await inbound.close(); await outbound.close() })
  await (await outbound.request({ method: 'GET', path: '/eureka/apps/' })).body.text()
  // The consumers close their idle connections after a few polls (Envoy never does).
  let closed = false
  const closing = waitFor('a few polls', () => envoy.adminLog.length >= 4).then(async () => { closed = true; await inbound.close() })
  const { problems } = await drainStep(t, { envoyAdmin: envoy.adminUrl })
  await closing
  // No problem means no timeout: the step ended on the count, not on drainTimeoutMs.
  assert.deepEqual(codes(problems), [])
  assert.equal(envoy.connections, 0, 'done once the inbound connections were gone')
  assert.equal(envoy.outboundConnections, 1, 'while the outbound one is still open')
})

test('Istio: idle pooled inbound connections hold the count; the idle rule needs the request stats (statsInclusionSuffixes)', async (t) => {
  for (const include of [false, true]) {
    const { envoy } = await envoyFor(t, {
      istio: { exitOnZeroActiveConnections: true, statsInclusionSuffixes: include ? ['downstream_rq_active', 'downstream_rq_total'] : [] },
      drainTimeMs: 300
    })
    const inbound = await openConnections(envoy.url, 1)
    t.after(() => inbound.close())
    const { problems } = await drainStep(t, { envoyAdmin: envoy.adminUrl, idleQuietMs: 100, drainTimeoutMs: include ? DRAIN_TIMEOUT_MS : 500 })
    // Without the request gauges there is no evidence the connection is idle: the bound decides.
    assert.deepEqual(codes(problems), include ? [] : [ENVOY_ERROR_CODES.TIMEOUT], `statsInclusionSuffixes ${String(include)}`)
    assert.equal(envoy.connections, 1)
  }
})

test('Istio without EXIT_ON_ZERO_ACTIVE_CONNECTIONS: count unavailable, a bounded wait instead of polling to the timeout', async (t) => {
  const { envoy } = await envoyFor(t, { istio: { exitOnZeroActiveConnections: false }, drainTimeMs: 300 })
  const inbound = await openConnections(envoy.url, 1)
  t.after(() => inbound.close())
  const { problems, tookMs } = await drainStep(t, { envoyAdmin: envoy.adminUrl, unavailableWaitMs: 400 })
  assert.deepEqual(codes(problems), [ENVOY_ERROR_CODES.STATS_UNAVAILABLE], 'reported once, and no timeout')
  assert.ok(tookMs >= 400, `waited the fallback (${tookMs} ms)`)
})

test('plain Envoy (no Istio listener names): every listener still counts, outbound included', async (t) => {
  const registry = await startApp()
  t.after(() => registry.close())
  const { envoy } = await envoyFor(t, { outbound: registry.url, drainTimeMs: 60_000 })
  const outbound = new Client(envoy.outboundUrl!, { keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 })
  t.after(() => outbound.closed ? undefined : outbound.close())
  await (await outbound.request({ method: 'GET', path: '/x' })).body.text()
  const closing = waitFor('a few polls', () => envoy.adminLog.length >= 4).then(() => outbound.close())
  const { problems } = await drainStep(t, { envoyAdmin: envoy.adminUrl })
  await closing
  assert.deepEqual(codes(problems), [])
  assert.ok(envoy.adminLog.length >= 4, 'it waited for the outbound connection')
})

test('Istio without EXIT_ON_ZERO_ACTIVE_CONNECTIONS but with the request gauges: no count, yet the idle rule ends the drain', async (t) => {
  const { envoy } = await envoyFor(t, { istio: { exitOnZeroActiveConnections: false, statsInclusionSuffixes: ['downstream_rq_active', 'downstream_rq_total'] }, drainTimeMs: 60_000 })
  const inbound = await openConnections(envoy.url, 1)
  t.after(() => inbound.close())
  const admin = envoyAdmin({ url: envoy.adminUrl })
  t.after(() => admin.close())
  const errors: string[] = []
  const result = await drainEnvoy(admin, {
    strategy: 'listeners',
    inboundOnly: true,
    checkIntervalMs: 20,
    idleQuietMs: 100,
    unavailableWaitMs: 30_000,
    timeoutMs: 30_000,
    onProgress: (e) => { if (e.type === 'poll-error') errors.push((e.error as EnvoyAdminError).code) }
  })
  assert.equal(result.outcome, 'idle', 'not the 30 s unavailable wait')
  assert.equal(result.drained && result.count, -1)
  assert.ok(errors.length > 0 && errors.every((c) => c === ENVOY_ERROR_CODES.STATS_UNAVAILABLE))
  assert.equal(envoy.connections, 1)
})
