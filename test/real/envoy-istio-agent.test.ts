// Istio's real pilot-agent (`wait` and `request`, the parts that run without istiod; built by
// test/real/envoy/install-pilot-agent.sh) against real Envoy 1.40.0 in Istio's layout and the
// devkit stand-in in its Istio mode, then lameduck's sidecar drain step on the Envoy pilot-agent
// drained, in the order of pilot-agent's termination: `drain_listeners?inboundonly&graceful`,
// then (with EXIT_ON_ZERO_ACTIVE_CONNECTIONS) polls of the connection count. `pilot-agent
// request` only talks to the admin ports it knows (15000 here), so this file binds 15000.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { silentLogger, systemClock } from '@lameduck/core'
import { envoyAdmin, envoySidecar } from '@lameduck/envoy'
import { startEnvoy } from '@lameduck/devkit'
import { until } from '@lameduck/test-utils'
import { Client } from 'undici'
import { startRealEnvoy } from './helpers/envoy.ts'

const INSTALL = fileURLToPath(new URL('./envoy/install-pilot-agent.sh', import.meta.url))
let agentBin: string | undefined
const pilotAgent = (): string => {
  agentBin ??= execFileSync('bash', [INSTALL], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').at(-1)!
  return agentBin
}

function run (args: string[]): Promise<{ code: number, out: string }> {
  return new Promise((resolve) => {
    execFile(pilotAgent(), args, { timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, out: stdout + stderr })
    })
  })
}

async function startApp (t: import('node:test').TestContext): Promise<string> {
  const server: Server = createServer((req, res) => res.end(`ok ${req.url}`))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

interface Target { adminUrl: string, inboundUrl: string, stop: () => Promise<void>, initialize?: () => void }

async function envoyFor (t: import('node:test').TestContext, target: 'real' | 'stand-in', options: { initializeDelayMs?: number } = {}): Promise<Target> {
  const upstream = await startApp(t)
  if (target === 'real') {
    const e = await startRealEnvoy({ upstream, layout: 'istio', adminPort: 15000, drainTimeS: 2 })
    t.after(() => e.stop())
    return { adminUrl: e.adminUrl, inboundUrl: e.inboundUrl, stop: e.stop }
  }
  const e = await startEnvoy({
    upstream,
    outbound: upstream,
    admin: 15000,
    drainTimeMs: 2_000,
    istio: { exitOnZeroActiveConnections: true, statsInclusionSuffixes: ['downstream_rq_active', 'downstream_rq_total'] },
    ...options
  })
  t.after(() => e.close())
  return { adminUrl: e.adminUrl, inboundUrl: e.url, stop: () => e.close(), initialize: () => e.initialize() }
}

for (const target of ['real', 'stand-in'] as const) {
  test(`[${target}] pilot-agent wait, then pilot-agent request POST drain_listeners?inboundonly&graceful, then lameduck's drain step`, async (t) => {
    const envoy = await envoyFor(t, target)
    const waited = await run(['wait', '--url', `${envoy.adminUrl}/ready`, '--timeoutSeconds', '20', '--periodMillis', '100'])
    assert.equal(waited.code, 0, waited.out)
    assert.match(waited.out, /Envoy is ready!/)

    const [pooled, idle] = [0, 1].map(() => new Client(envoy.inboundUrl, { keepAliveTimeout: 600_000, keepAliveMaxTimeout: 600_000 }))
    t.after(async () => { await pooled!.close().catch(() => {}); await idle!.close().catch(() => {}) })
    for (const c of [pooled!, idle!]) await (await c.request({ method: 'GET', path: '/before' })).body.text()
    const drained = await run(['request', 'POST', 'drain_listeners?inboundonly&graceful'])
    assert.equal(drained.code, 0, drained.out)
    assert.match(drained.out, /OK/)
    const admin = envoyAdmin({ url: envoy.adminUrl })
    t.after(() => admin.close())
    assert.equal(await admin.ready(), 'LIVE', 'pilot-agent\'s drain does not change /ready')
    const told = await pooled!.request({ method: 'GET', path: '/told' })
    await told.body.text()
    assert.equal(told.headers.connection, 'close', 'inbound responses are told to close')

    // lameduck's step after the window on the same Envoy: its own drain call is idempotent, and it
    // ends on the idle rule while the other pooled connection stays idle (pilot-agent's exit-on-zero
    // poll would not: its count stays at 1 until the consumer closes it).
    await until(async () => await admin.activeConnections({ method: 'istio', inboundListeners: ['0.0.0.0_15006'] }) === 1, 'the told connection to close')
    const sidecar = envoySidecar({ envoyAdmin: envoy.adminUrl, checkIntervalMs: 100, idleQuietMs: 300, drainTimeoutMs: 20_000 })
    t.after(() => sidecar.close())
    const problems: unknown[] = []
    await sidecar.afterWindow[0]!.run({ signal: new AbortController().signal, clock: systemClock, logger: silentLogger, problem: (e) => problems.push(e) })
    assert.deepEqual(problems, [])
    assert.equal(await admin.activeConnections({ method: 'istio', inboundListeners: ['0.0.0.0_15006'] }), 1, 'the idle connection is still open')
  })
}

test('[stand-in] pilot-agent wait keeps waiting while the stand-in initializes, and times out when it never turns LIVE', async (t) => {
  const envoy = await envoyFor(t, 'stand-in', { initializeDelayMs: 60_000 })
  const pending = run(['wait', '--url', `${envoy.adminUrl}/ready`, '--timeoutSeconds', '20', '--periodMillis', '100'])
  const admin = envoyAdmin({ url: envoy.adminUrl })
  t.after(() => admin.close())
  await until(async () => await admin.ready() === 'INITIALIZING', 'INITIALIZING')
  envoy.initialize!()
  const waited = await pending
  assert.equal(waited.code, 0, waited.out)
  await envoy.stop() // frees 15000 for the next one
  const never = await envoyFor(t, 'stand-in', { initializeDelayMs: 60_000 })
  const failed = await run(['wait', '--url', `${never.adminUrl}/ready`, '--timeoutSeconds', '1', '--periodMillis', '100'])
  assert.notEqual(failed.code, 0, failed.out)
})
