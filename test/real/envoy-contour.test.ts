// Contour's real shutdown sequence (`contour envoy shutdown`, v1.33.8, built by
// test/real/envoy/install-contour.sh) run unchanged against real Envoy 1.40.0 (admin on a Unix
// socket, as Contour's pods have it) and against the devkit stand-in (through a Unix-to-TCP
// bridge: the stand-in's admin is TCP), beside lameduck's healthcheck drain on the same Envoy.
// Contour waits for the connection count to reach --min-open-connections; an idle pooled
// connection holds it (Envoy never closes one), where lameduck's drain ends on the idle rule.
// Then the whole pod sequence with the real `contour envoy shutdown-manager` serving /healthz and
// /shutdown over HTTP (Envoy's preStop), the same step by step on real Envoy and the stand-in.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs'
import { createServer as createHttpServer, type Server } from 'node:http'
import { connect, createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { drainEnvoy, envoyAdmin } from '@lameduck/envoy'
import { startEnvoy } from '@lameduck/devkit'
import { until } from '@lameduck/test-utils'
import { Client, request } from 'undici'
import { startRealEnvoy } from './helpers/envoy.ts'

const INSTALL = fileURLToPath(new URL('./envoy/install-contour.sh', import.meta.url))
let contourBin: string | undefined
const contour = (): string => {
  contourBin ??= execFileSync('bash', [INSTALL], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').at(-1)!
  return contourBin
}

interface Admin { socket: string, url: string, requests: () => string[], stop: () => Promise<void> }

async function startApp (t: import('node:test').TestContext): Promise<string> {
  const server: Server = createHttpServer((req, res) => res.end(`ok ${req.url}`))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Real Envoy with its admin on a Unix socket, or the stand-in behind a Unix-to-TCP bridge. */
async function envoyFor (t: import('node:test').TestContext, target: 'real' | 'stand-in', dir: string): Promise<{ admin: Admin, inboundUrl: string }> {
  const upstream = await startApp(t)
  const socket = join(dir, 'admin.sock')
  if (target === 'real') {
    const e = await startRealEnvoy({ upstream, layout: 'contour', adminSocket: socket, drainTimeS: 2 })
    t.after(() => e.stop())
    return { admin: { socket, url: 'http://localhost', requests: () => [], stop: e.stop }, inboundUrl: e.inboundUrl }
  }
  const e = await startEnvoy({ upstream, outbound: upstream, drainTimeMs: 2_000 })
  const bridge = createServer((c) => {
    const up = connect(e.adminPort, '127.0.0.1')
    c.pipe(up).pipe(c)
    c.on('error', () => up.destroy())
    up.on('error', () => c.destroy())
  })
  await new Promise<void>((resolve) => bridge.listen(socket, resolve))
  const stop = async (): Promise<void> => { await new Promise<void>((resolve) => bridge.close(() => resolve())); await e.close() }
  t.after(stop)
  return { admin: { socket, url: 'http://localhost', requests: () => e.adminLog.map((l) => `${l.method} ${l.url}`), stop }, inboundUrl: e.url }
}

/** `contour envoy shutdown` as its preStop runs it; resolves with its exit code and log. */
function contourShutdown (admin: Admin, readyFile: string): { done: Promise<{ code: number | null, log: string }>, pid: number } {
  const child = spawn(contour(), ['envoy', 'shutdown', '--admin-address', admin.socket, '--check-interval', '500ms', '--min-open-connections', '0', '--ready-file', readyFile], { stdio: ['ignore', 'pipe', 'pipe'] })
  let log = ''
  child.stdout!.on('data', (c: Buffer) => { log += c.toString() })
  child.stderr!.on('data', (c: Buffer) => { log += c.toString() })
  const done = new Promise<{ code: number | null, log: string }>((resolve) => child.once('exit', (code) => resolve({ code, log })))
  return { done, pid: child.pid! }
}

for (const target of ['real', 'stand-in'] as const) {
  test(`[${target}] contour envoy shutdown: /healthcheck/fail, then polls while an idle pooled connection stays open; done when it closes`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'lameduck-contour-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    const { admin, inboundUrl } = await envoyFor(t, target, dir)
    const pooled = new Client(inboundUrl, { keepAliveTimeout: 600_000, keepAliveMaxTimeout: 600_000 })
    t.after(() => pooled.close().catch(() => {}))
    await (await pooled.request({ method: 'GET', path: '/before' })).body.text()
    const readyFile = join(dir, 'ok')
    const run = contourShutdown(admin, readyFile)
    t.after(() => { try { process.kill(run.pid, 'SIGKILL') } catch {} })
    const client = envoyAdmin({ url: admin.url, socketPath: admin.socket })
    t.after(() => client.close())
    await until(async () => await client.ready().catch(() => 'error') === 'DRAINING', 'Contour to fail the health check')
    // Contour's count (its own query, its own exclusions) reads the idle connection and waits.
    await until(async () => (await client.connectionCount({ method: 'contour' })).count === 1, 'one idle connection counted')
    const seenAt = Date.now()
    await until(() => Date.now() - seenAt >= 1_500, 'three of Contour\'s polls')
    assert.equal(existsSync(readyFile), false, 'still waiting: the idle connection holds it')
    // lameduck's healthcheck drain on the same Envoy ends on the idle rule instead.
    const ours = await drainEnvoy(client, { strategy: 'healthcheck', method: 'contour', checkIntervalMs: 100, idleQuietMs: 300, timeoutMs: 20_000 })
    assert.equal(ours.outcome, 'idle')
    // The consumer closes its pool: Contour writes its ready file and exits 0.
    await pooled.close()
    const { code, log } = await run.done
    assert.equal(code, 0, log)
    assert.ok(existsSync(readyFile))
    if (target === 'stand-in') {
      const calls = admin.requests()
      assert.equal(calls.find((c) => c.startsWith('POST ')), 'POST /healthcheck/fail', 'Contour\'s first call')
      assert.ok(calls.filter((c) => c.startsWith('GET /stats/prometheus?filter=')).length >= 3, calls.join('\n'))
    }
  })
}

/** The port a process listens on, from /proc (the shutdown-manager binds `:<serve-port>`; 0 lets the kernel pick). */
function listeningPort (pid: number): number | null {
  const inodes = new Set<string>()
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try { const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`)); if (m) inodes.add(m[1]!) } catch {}
  }
  for (const table of ['/proc/net/tcp6', '/proc/net/tcp']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      // local_address is HEX_IP:HEX_PORT; st 0A = LISTEN; inode is the 10th field.
      if (f[3] === '0A' && inodes.has(f[9]!)) return parseInt(f[1]!.split(':')[1]!, 16)
    }
  }
  return null
}

/** `contour envoy shutdown-manager` on a kernel-picked port; stopped by PID. */
async function shutdownManager (t: import('node:test').TestContext, readyFile: string): Promise<string> {
  const child = spawn(contour(), ['envoy', 'shutdown-manager', '--serve-port', '0', '--ready-file', readyFile], { stdio: 'ignore' })
  t.after(() => { try { process.kill(child.pid!, 'SIGKILL') } catch {} })
  let port: number | null = null
  await until(() => (port = listeningPort(child.pid!)) !== null, 'the shutdown-manager to listen')
  return `http://127.0.0.1:${port!}`
}

/**
 * Contour's pod sequence on one Envoy, as a transcript: Envoy's preStop `GET :8090/shutdown` (blocks),
 * the shutdown-manager container's preStop `contour envoy shutdown` (fails the health check, polls
 * the count), a consumer holding a pooled connection that sends once more mid-drain.
 */
async function contourPodSequence (t: import('node:test').TestContext, target: 'real' | 'stand-in'): Promise<string[]> {
  const out: string[] = []
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-contour-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const { admin, inboundUrl } = await envoyFor(t, target, dir)
  const readyFile = join(dir, 'ok')
  const manager = await shutdownManager(t, readyFile)
  const healthz = await request(`${manager}/healthz`)
  out.push(`healthz ${healthz.statusCode} ${await healthz.body.text()}`)
  const pooled = new Client(inboundUrl, { keepAliveTimeout: 600_000, keepAliveMaxTimeout: 600_000 })
  t.after(() => pooled.close().catch(() => {}))
  await (await pooled.request({ method: 'GET', path: '/before' })).body.text()
  // Envoy's preStop (httpGet /shutdown), then the shutdown-manager's preStop (exec).
  let answered: { status: number, body: string } | null = null
  const envoyPreStop = request(`${manager}/shutdown`, { headersTimeout: 120_000, bodyTimeout: 120_000 })
    .then(async (r) => { answered = { status: r.statusCode, body: await r.body.text() } })
  const run = contourShutdown(admin, readyFile)
  t.after(() => { try { process.kill(run.pid, 'SIGKILL') } catch {} })
  const client = envoyAdmin({ url: admin.url, socketPath: admin.socket })
  t.after(() => client.close())
  await until(async () => await client.ready().catch(() => 'error') === 'DRAINING', 'Contour to fail the health check')
  await until(async () => (await client.connectionCount({ method: 'contour' })).count === 1, 'the pooled connection counted')
  const seenAt = Date.now()
  await until(() => Date.now() - seenAt >= 2_000, 'two of the shutdown-manager\'s ready-file checks')
  out.push(`shutdown pending with 1 connection open: ${answered === null && !existsSync(readyFile)}`)
  // The consumer sends on its pooled connection: served, and told to close (drain-close after /healthcheck/fail).
  const last = await pooled.request({ method: 'GET', path: '/during' })
  await last.body.text()
  out.push(`pooled request ${last.statusCode} connection: ${String(last.headers.connection)}`)
  // Bounded: a stand-in that kept the connection would hold Contour (and this test) forever.
  await until(() => answered !== null, 'the shutdown-manager to answer /shutdown', { timeoutMs: 30_000 })
  await envoyPreStop
  const { code } = await run.done
  out.push(`contour envoy shutdown exit ${code}, ready file ${existsSync(readyFile)}`)
  out.push(`shutdown ${answered!.status} ${answered!.body}`)
  return out
}

test('contour envoy shutdown-manager over HTTP: /healthz, /shutdown blocks until the drain wrote the ready file — the stand-in behaves as real Envoy', async (t) => {
  const real = await contourPodSequence(t, 'real')
  const standIn = await contourPodSequence(t, 'stand-in')
  const expected = [
    'healthz 200 OK',
    'shutdown pending with 1 connection open: true',
    'pooled request 200 connection: close',
    'contour envoy shutdown exit 0, ready file true',
    'shutdown 200 OK'
  ]
  assert.deepEqual(real, expected, 'real Envoy')
  assert.deepEqual(standIn, real, 'the stand-in, step by step as real Envoy')
})
