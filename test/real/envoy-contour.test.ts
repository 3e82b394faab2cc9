// Contour's real shutdown sequence (`contour envoy shutdown`, v1.33.8, built by
// test/real/envoy/install-contour.sh) run unchanged against real Envoy 1.40.0 (admin on a Unix
// socket, as Contour's pods have it) and against the devkit stand-in (through a Unix-to-TCP
// bridge: the stand-in's admin is TCP), beside lameduck's healthcheck drain on the same Envoy.
// Contour waits for the connection count to reach --min-open-connections; an idle pooled
// connection holds it (Envoy never closes one), where lameduck's drain ends on the idle rule.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer as createHttpServer, type Server } from 'node:http'
import { connect, createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { drainEnvoy, envoyAdmin } from '@lameduck/envoy'
import { startEnvoy } from '@lameduck/devkit'
import { until } from '@lameduck/test-utils'
import { Client } from 'undici'
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
