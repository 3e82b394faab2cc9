// Differential conformance: the same assertions against the devkit's Envoy stand-in and real
// Envoy 1.40.0 (helpers/envoy-targets.ts): every admin call @lameduck/envoy and the devkit
// make, and the data path while draining. Where the two differ on purpose, the expectation is
// written per target (`expect[target]`), so a change on either side fails here; each such
// difference has a row in docs/fidelity.md ("## Envoy").
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import { connect as h2connect, createServer as createH2Server } from 'node:http2'
import type { AddressInfo } from 'node:net'
import { silentLogger, systemClock } from '@lameduck/core'
import { CONNECTION_STATS_PATHS, ENVOY_ERROR_CODES, EnvoyAdminError, envoyAdmin, envoySidecar, REQUEST_STATS_PATH } from '@lameduck/envoy'
import { until } from '@lameduck/test-utils'
import { Client } from 'undici'
import { startEnvoy } from '@lameduck/devkit'
import { startRealEnvoy } from './helpers/envoy.ts'
import { startTarget, TARGETS, type EnvoyTarget, type TargetName } from './helpers/envoy-targets.ts'

interface App { url: string, server: Server, close: () => Promise<void> }

/** 200 `ok <url>`; /reset destroys the connection once the request arrived (bytes were sent upstream). */
async function startApp (): Promise<App> {
  const server = createServer((req, res) => {
    if (req.url === '/reset') { req.socket.destroy(); return }
    res.end(`ok ${req.url}`)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) })
  }
}

async function setup (t: import('node:test').TestContext, name: TargetName): Promise<{ app: App, envoy: EnvoyTarget }> {
  const app = await startApp()
  t.after(() => app.server.listening ? app.close() : undefined)
  const envoy = await startTarget(name, { upstream: app.url })
  t.after(() => envoy.stop())
  return { app, envoy }
}

const keepAlive = (url: string): Client => new Client(url, { keepAliveTimeout: 600_000, keepAliveMaxTimeout: 600_000 })

async function get (client: Client, path = '/x'): Promise<{ status: number, connection: string | undefined, body: string }> {
  const res = await client.request({ method: 'GET', path })
  return { status: res.statusCode, connection: res.headers.connection as string | undefined, body: await res.body.text() }
}

/** A one-off request on a fresh connection; resolves with the error code when refused. */
async function fresh (url: string, path = '/fresh'): Promise<{ status: number, connection: string | undefined } | string> {
  const c = new Client(url)
  try {
    const r = await get(c, path)
    return { status: r.status, connection: r.connection }
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? String(err)
  } finally {
    await c.close().catch(() => {})
  }
}

const stat = async (envoy: EnvoyTarget, name: string): Promise<number> => {
  const res = await envoy.admin('GET', `/stats?filter=^${name.replaceAll('.', '\\.')}$`)
  const m = /: (\d+)/.exec(res.body)
  return m === null ? -1 : Number(m[1])
}

for (const name of TARGETS) {
  test(`[${name}] /ready, /server_info, 405 on a mutating GET, 404 on an unknown path`, async (t) => {
    const { envoy } = await setup(t, name)
    const ready = await envoy.admin('GET', '/ready')
    assert.deepEqual([ready.status, ready.body, ready.headers['content-type']], [200, 'LIVE\n', 'text/plain; charset=UTF-8'])
    assert.equal(ready.headers['cache-control'], 'no-cache, max-age=0')
    assert.equal(ready.headers['x-content-type-options'], 'nosniff')
    const admin = envoyAdmin({ url: envoy.adminUrl })
    t.after(() => admin.close())
    assert.equal(await admin.ready(), 'LIVE')
    const info = await admin.serverInfo()
    assert.equal(info.state, 'LIVE')
    assert.equal(info.command_line_options?.drain_time, '2s')
    assert.equal(info.command_line_options?.drain_strategy, 'Immediate')
    assert.match(String(info.version), { 'stand-in': /\/1\.40\.0\/Clean\/RELEASE\/BoringSSL \(lameduck-devkit\)$/, real: /^[0-9a-f]{40}\/1\.40\.0\/Clean\/RELEASE\/BoringSSL$/ }[name])
    const si = await envoy.admin('GET', '/server_info')
    assert.equal(si.headers['content-type'], 'application/json')
    for (const path of ['/healthcheck/fail', '/healthcheck/ok', '/drain_listeners?inboundonly&graceful', '/quitquitquit']) {
      const res = await envoy.admin('GET', path)
      assert.deepEqual([res.status, res.body], [405, 'Method GET not allowed, POST required.'], path)
    }
    const unknown = await envoy.admin('GET', '/readyz')
    assert.equal(unknown.status, 404)
    assert.ok(unknown.body.startsWith('invalid path. admin commands are:\n'), unknown.body.slice(0, 80))
    assert.equal(await admin.ready(), 'LIVE', 'nothing changed')
  })

  test(`[${name}] the connection counts in Istio's, Contour's, JSON and Prometheus forms, and the request gauges`, async (t) => {
    const { envoy } = await setup(t, name)
    const inbound = [keepAlive(envoy.inboundUrl), keepAlive(envoy.inboundUrl)]
    const outbound = keepAlive(envoy.outboundUrl)
    t.after(async () => { for (const c of [...inbound, outbound]) await c.close() })
    for (const c of [...inbound, outbound]) assert.equal((await get(c)).status, 200)
    const admin = envoyAdmin({ url: envoy.adminUrl })
    t.after(() => admin.close())
    await until(async () => await admin.activeConnections({ method: 'json' }) === 3, 'the three connections counted')
    // Every listener, outbound included; the admin's own connection never counts.
    assert.equal(await admin.activeConnections({ method: 'istio' }), 3)
    assert.equal(await admin.activeConnections({ method: 'contour' }), 3)
    assert.equal(await admin.activeConnections({ method: 'json' }), 3)
    assert.equal(await admin.activeConnections({ method: 'istio', inboundListeners: [envoy.inboundStatAddress] }), 2)
    assert.equal(await admin.activeConnections({ method: 'json', inboundListeners: [envoy.inboundStatAddress] }), 2)
    assert.equal(await admin.activeConnections({ method: 'contour', include: /^ingress_http$/ }), 2)
    const requests = await admin.requestCount()
    assert.deepEqual([requests.active, requests.prefixes], [0, ['ingress_http']])
    assert.ok(requests.total >= 2)

    const istio = await envoy.admin('GET', CONNECTION_STATS_PATHS.istio)
    assert.match(istio.body, new RegExp(`^listener\\.${envoy.inboundStatAddress.replaceAll('.', '\\.')}\\.downstream_cx_active: 2$`, 'm'))
    assert.match(istio.body, /^listener\.admin\.downstream_cx_active: \d+$/m)
    assert.match(istio.body, /^http\.ingress_http\.downstream_cx_active: 2$/m)
    const workers = [...istio.body.matchAll(new RegExp(`^listener\\.${envoy.inboundStatAddress.replaceAll('.', '\\.')}\\.worker_(\\d+)\\.downstream_cx_active: (\\d+)$`, 'gm'))]
    // Per-worker duplicates (concurrency 2); usedonly hides a worker that never took a connection.
    assert.ok(workers.length >= 1 && workers.every((m) => m[1] === '0' || m[1] === '1'), workers.map((m) => m[0]).join(', '))
    assert.equal(workers.reduce((sum, m) => sum + Number(m[2]), 0), 2)
    const prom = await envoy.admin('GET', CONNECTION_STATS_PATHS.contour)
    assert.match(prom.body, /^# TYPE envoy_http_downstream_cx_active gauge$/m)
    assert.match(prom.body, /^envoy_http_downstream_cx_active\{envoy_http_conn_manager_prefix="ingress_http"\} 2$/m)
    assert.match(prom.body, /^envoy_http_downstream_cx_active\{envoy_http_conn_manager_prefix="admin"\} \d+$/m)
    assert.doesNotMatch(prom.body, /^# HELP/m)
    assert.doesNotMatch(prom.body, /\n\n/, 'no blank line after a family (1.40.0)')
    const json = JSON.parse((await envoy.admin('GET', CONNECTION_STATS_PATHS.json)).body) as { stats: Array<{ name: string, value: number }> }
    assert.ok(json.stats.some((s) => s.name === `listener.${envoy.inboundStatAddress}.downstream_cx_active` && s.value === 2))
    const rq = JSON.parse((await envoy.admin('GET', REQUEST_STATS_PATH)).body) as { stats: Array<{ name: string }> }
    assert.deepEqual(rq.stats.map((s) => s.name).filter((n) => !n.startsWith('http.admin.')).sort(),
      ['http.ingress_http.downstream_rq_active', 'http.ingress_http.downstream_rq_total', 'http.outbound_http.downstream_rq_active', 'http.outbound_http.downstream_rq_total'])
    assert.equal((await envoy.admin('GET', '/stats?filter=^no_such_stat$&format=json')).body.replace(/\s/g, ''), '{"stats":[]}')
    const bad = await envoy.admin('GET', '/stats?filter=(')
    assert.equal(bad.status, 400)
    assert.match(bad.body, /Invalid re2 regex/)
  })

  test(`[${name}] drain_listeners?inboundonly&graceful: LIVE stays, inbound told to close, outbound not; accepted during the drain time, refused after; idle connections stay`, async (t) => {
    const { envoy } = await setup(t, name)
    const [told, idle] = [keepAlive(envoy.inboundUrl), keepAlive(envoy.inboundUrl)]
    const outbound = keepAlive(envoy.outboundUrl)
    t.after(async () => { for (const c of [told, idle, outbound]) await c.close().catch(() => {}) })
    for (const c of [told, idle, outbound]) assert.deepEqual((await get(c)).connection, undefined)
    const drained = await envoy.admin('POST', '/drain_listeners?inboundonly&graceful')
    assert.deepEqual([drained.status, drained.body], [200, 'OK\n'])
    assert.deepEqual([(await envoy.admin('GET', '/ready')).body], ['LIVE\n'], 'a drain never changes /ready')
    assert.equal((await get(told)).connection, 'close')
    assert.equal((await get(outbound)).connection, undefined, 'outbound listeners are not drained')
    assert.deepEqual(await fresh(envoy.inboundUrl), { status: 200, connection: 'close' }, 'still accepting during the drain time')
    assert.equal(await stat(envoy, 'listener_manager.listener_stopped'), 0)
    await until(async () => await stat(envoy, 'listener_manager.listener_stopped') === 1, 'the inbound listener to stop', { timeoutMs: 20_000 })
    assert.equal(await fresh(envoy.inboundUrl), 'ECONNREFUSED')
    assert.deepEqual((await get(outbound)).status, 200, 'outbound still serves')
    assert.deepEqual((await fresh(envoy.outboundUrl)), { status: 200, connection: undefined })
    assert.equal(await stat(envoy, `listener.${envoy.inboundStatAddress}.downstream_cx_active`), 1, 'the idle connection outlives the drain time')
    assert.deepEqual(await get(idle), { status: 200, connection: 'close', body: 'ok /x' }, 'and is served, told to close')
    assert.ok(await stat(envoy, 'http.ingress_http.downstream_cx_drain_close') >= 2)
    // Repeating it is harmless.
    assert.equal((await envoy.admin('POST', '/drain_listeners?inboundonly&graceful')).body, 'OK\n')
  })

  test(`[${name}] skip_exit keeps accepting past the drain time; a non-graceful drain stops at once and tells existing connections`, async (t) => {
    const { envoy } = await setup(t, name)
    const c = keepAlive(envoy.inboundUrl)
    t.after(() => c.close().catch(() => {}))
    await get(c)
    assert.equal((await envoy.admin('POST', '/drain_listeners?inboundonly&graceful&skip_exit')).body, 'OK\n')
    const started = Date.now()
    await until(() => Date.now() - started > 2_500, 'the drain time to pass', { timeoutMs: 10_000 })
    assert.deepEqual(await fresh(envoy.inboundUrl), { status: 200, connection: 'close' }, 'accepting after the drain time')
    assert.equal(await stat(envoy, 'listener_manager.listener_stopped'), 0)

    const second = await setup(t, name)
    const d = keepAlive(second.envoy.inboundUrl)
    t.after(() => d.close().catch(() => {}))
    await get(d)
    assert.equal((await second.envoy.admin('POST', '/drain_listeners?inboundonly')).body, 'OK\n')
    // Stopped at once, not after the drain time (real Envoy closes the workers' sockets
    // asynchronously: a connect in that instant may be reset rather than refused).
    await until(async () => await stat(second.envoy, 'listener_manager.listener_stopped') === 1, 'the listener to stop')
    assert.equal(await fresh(second.envoy.inboundUrl), 'ECONNREFUSED')
    assert.deepEqual((await get(d)).connection, 'close', 'an existing connection is told to close (Envoy >= #47042)')
  })

  test(`[${name}] /healthcheck/fail: /ready DRAINING, every listener told to close, still accepting; /healthcheck/ok undoes it`, async (t) => {
    const { envoy } = await setup(t, name)
    const inbound = keepAlive(envoy.inboundUrl)
    const outbound = keepAlive(envoy.outboundUrl)
    t.after(async () => { await inbound.close().catch(() => {}); await outbound.close().catch(() => {}) })
    const admin = envoyAdmin({ url: envoy.adminUrl })
    t.after(() => admin.close())
    await admin.failHealthcheck()
    const ready = await envoy.admin('GET', '/ready')
    assert.deepEqual([ready.status, ready.body], [503, 'DRAINING\n'])
    assert.equal((await admin.serverInfo()).state, 'DRAINING')
    assert.equal(await stat(envoy, 'server.live'), 0)
    assert.equal((await get(inbound)).connection, 'close')
    assert.equal((await get(outbound)).connection, 'close', 'health check failure drains every DEFAULT listener')
    assert.deepEqual(await fresh(envoy.inboundUrl), { status: 200, connection: 'close' })
    await admin.okHealthcheck()
    assert.equal(await admin.ready(), 'LIVE')
    assert.deepEqual(await fresh(envoy.inboundUrl), { status: 200, connection: undefined })
  })

  test(`[${name}] /quitquitquit: OK, then gone at once`, async (t) => {
    const { envoy } = await setup(t, name)
    const res = await envoy.admin('POST', '/quitquitquit')
    assert.deepEqual([res.status, res.body], [200, 'OK\n'])
    await envoy.exited
    assert.equal(await fresh(envoy.inboundUrl), 'ECONNREFUSED')
  })

  test(`[${name}] upstream failures: a reset after the request went up is not retried; a refused connect is`, async (t) => {
    const { app, envoy } = await setup(t, name)
    const ok = await new Client(envoy.inboundUrl).request({ method: 'GET', path: '/headers' })
    await ok.body.text()
    assert.equal(ok.headers.server, 'envoy')
    assert.match(String(ok.headers['x-envoy-upstream-service-time']), /^\d+$/)
    assert.equal(ok.headers['keep-alive'], undefined)
    const reset = await fresh(envoy.inboundUrl, '/reset')
    assert.deepEqual(reset, { status: 503, connection: undefined })
    const c = new Client(envoy.inboundUrl)
    t.after(() => c.close())
    const body = (await get(c, '/reset')).body
    assert.equal(body, 'upstream connect error or disconnect/reset before headers. reset reason: connection termination')
    assert.equal(await stat(envoy, 'cluster.inbound_app.upstream_rq_retry'), { 'stand-in': -1, real: 0 }[name])
    await app.close()
    const down = await get(c, '/down')
    assert.equal(down.status, 503)
    assert.equal(down.body, {
      'stand-in': 'upstream connect error or disconnect/reset before headers. retried and the latest reset reason: remote connection failure',
      real: 'upstream connect error or disconnect/reset before headers. retried and the latest reset reason: remote connection failure'
    }[name])
  })

  test(`[${name}] Envoy gone in the middle of the sidecar drain: reported once as unreachable, the step returns`, async (t) => {
    const { envoy } = await setup(t, name)
    const pooled = keepAlive(envoy.inboundUrl)
    t.after(() => pooled.close().catch(() => {}))
    await get(pooled)
    const sidecar = envoySidecar({ envoyAdmin: envoy.adminUrl, checkIntervalMs: 100, idleQuietMs: false, drainTimeoutMs: 60_000, connections: { method: 'json' } })
    t.after(() => sidecar.close())
    const problems: unknown[] = []
    const step = sidecar.afterWindow[0]!.run({ signal: new AbortController().signal, clock: systemClock, logger: silentLogger, problem: (e) => problems.push(e) })
    await until(async () => { const r = await fresh(envoy.inboundUrl); return typeof r === 'object' && r.connection === 'close' }, 'the drain under way')
    await envoy.stop()
    await step
    assert.deepEqual(problems.map((p) => (p as EnvoyAdminError).code), [ENVOY_ERROR_CODES.UNREACHABLE])
  })

  test(`[${name}] HTTP/2 downstream: a drain sends GOAWAY`, async (t) => {
    const { envoy } = await setup(t, name)
    const session = h2connect(envoy.inboundUrl)
    t.after(() => session.destroy())
    const first = await new Promise<number | string>((resolve) => {
      session.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? String(err)))
      const req = session.request({ ':path': '/h2' })
      req.once('response', (h) => resolve(Number(h[':status'])))
      req.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? String(err)))
      req.resume()
      req.end()
    })
    // The stand-in speaks HTTP/1.1 only (docs/fidelity.md).
    assert.equal(first, { 'stand-in': 'ERR_HTTP2_ERROR', real: 200 }[name])
    if (name === 'stand-in') return
    const goaway = new Promise<void>((resolve) => session.once('goaway', () => resolve()))
    await envoy.admin('POST', '/drain_listeners?inboundonly&graceful')
    const req = session.request({ ':path': '/h2-after' })
    req.resume()
    req.end()
    await goaway
  })
}

test('Istio\'s layout: the listener count sees the inbound listener; Contour\'s Prometheus family misses an HCM prefix with dots (real) ', async (t) => {
  const app = await startApp()
  t.after(() => app.close())
  const real = await startRealEnvoy({ upstream: app.url, layout: 'istio' })
  t.after(() => real.stop())
  // The stand-in's Istio mode, with the stats the idle rule needs.
  const standIn = await startEnvoy({ upstream: app.url, outbound: app.url, istio: { exitOnZeroActiveConnections: true, statsInclusionSuffixes: ['downstream_rq_active', 'downstream_rq_total'] } })
  t.after(() => standIn.close())
  for (const [name, url, adminUrl] of [['real', real.inboundUrl, real.adminUrl], ['stand-in', standIn.url, standIn.adminUrl]] as const) {
    const clients = [keepAlive(url), keepAlive(url)]
    t.after(async () => { for (const c of clients) await c.close() })
    for (const c of clients) await get(c)
    const admin = envoyAdmin({ url: adminUrl })
    t.after(() => admin.close())
    await until(async () => await admin.activeConnections({ method: 'istio', inboundListeners: ['0.0.0.0_15006'] }) === 2, `${name}: 0.0.0.0_15006 counted`)
    // Real Istio names its inbound HCM `inbound_0.0.0.0_<port>`; Envoy's tag extraction then cuts
    // the prefix at the first dot (`envoy_http_0_0_0_8080_downstream_cx_active{...="inbound_0"}`),
    // so the family Contour sums never carries it. The stand-in keeps `ingress_http`.
    assert.equal(await admin.activeConnections({ method: 'contour' }), { real: 0, 'stand-in': 2 }[name], name)
    const requests = await admin.requestCount()
    assert.deepEqual([requests.active, requests.prefixes], [0, [{ real: 'inbound_0.0.0.0_8080', 'stand-in': 'ingress_http' }[name]]], name)
  }
})

test('[real] HTTP/2 upstream (an h2c app): served over h2, and the inbound drain still tells HTTP/1.1 consumers to close (the stand-in speaks HTTP/1.1 upstream only)', async (t) => {
  const app = createH2Server((req, res) => res.end(`h2 ${req.url} ${req.httpVersion}`))
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => app.close(() => resolve())))
  const envoy = await startRealEnvoy({ upstream: `http://127.0.0.1:${(app.address() as AddressInfo).port}`, layout: 'contour', http2Upstream: true })
  t.after(() => envoy.stop())
  const c = keepAlive(envoy.inboundUrl)
  t.after(() => c.close().catch(() => {}))
  assert.deepEqual(await get(c, '/a'), { status: 200, connection: undefined, body: 'h2 /a 2.0' })
  await envoy.admin('POST', '/drain_listeners?inboundonly&graceful')
  assert.deepEqual(await get(c, '/b'), { status: 200, connection: 'close', body: 'h2 /b 2.0' })
})

test('[real] a frozen Envoy (SIGSTOP): every admin call times out, the drain step reports it once and returns, never hangs', async (t) => {
  const app = await startApp()
  t.after(() => app.close())
  const envoy = await startRealEnvoy({ upstream: app.url, layout: 'istio' })
  t.after(async () => { try { process.kill(envoy.pid, 'SIGCONT') } catch {} await envoy.stop() })
  const pooled = keepAlive(envoy.inboundUrl)
  t.after(() => pooled.close().catch(() => {}))
  await get(pooled)
  const sidecar = envoySidecar({ envoyAdmin: envoy.adminUrl, timeoutMs: 200, checkIntervalMs: 100, idleQuietMs: 200, drainTimeoutMs: 1_500, drainBackoff: { initialMs: 50, factor: 2, jitter: 0 } })
  t.after(() => sidecar.close())
  process.kill(envoy.pid, 'SIGSTOP')
  const problems: unknown[] = []
  const started = Date.now()
  await sidecar.afterWindow[0]!.run({ signal: new AbortController().signal, clock: systemClock, logger: silentLogger, problem: (e) => problems.push(e) })
  assert.ok(Date.now() - started >= 4 * 200, 'four attempts, each to its timeout')
  // The drain call itself never got an answer: nothing was drained, so nothing to wait for.
  assert.deepEqual(problems.map((p) => (p as EnvoyAdminError).code), [ENVOY_ERROR_CODES.TIMEOUT])
  assert.match((problems[0] as Error).message, /did not answer within 200 ms/)
  process.kill(envoy.pid, 'SIGCONT')
  assert.equal((await envoy.admin('GET', '/ready')).status, 200, 'alive again')
})
