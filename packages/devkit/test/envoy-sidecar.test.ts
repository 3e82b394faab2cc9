// envoySidecar() (@lameduck/envoy) against the local Envoy: the startup step waits for
// LIVE, the drain step drains and waits for connections, and Envoy failures are reported
// without ever throwing out of the drain step.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createLifecycle, InvalidOptionError, memoryRegistry, silentLogger, systemClock, TimeoutError } from '@lameduck/core'
import { CONNECTION_STATS_PATHS, ENVOY_ERROR_CODES, REQUEST_STATS_PATH, EnvoyAdminError, envoySidecar, type EnvoySidecarOptions } from '@lameduck/envoy'
import { Client } from 'undici'
import { deadPort } from '@lameduck/test-utils'
import { fakeAdmin } from '../../envoy/test/fake-admin.ts'
import { envoyFor, openConnections, startApp, waitFor, type Ctx } from './envoy-helpers.ts'

function sidecarFor (t: Ctx, options: EnvoySidecarOptions): ReturnType<typeof envoySidecar> {
  const sidecar = envoySidecar({ readyIntervalMs: 10, checkIntervalMs: 20, drainBackoff: { initialMs: 5, factor: 2, jitter: 0 }, ...options })
  t.after(() => sidecar.close())
  return sidecar
}

async function runDrain (sidecar: ReturnType<typeof envoySidecar>, signal = new AbortController().signal): Promise<unknown[]> {
  const problems: unknown[] = []
  assert.equal(sidecar.afterWindow.length, 1)
  await sidecar.afterWindow[0]!.run({ signal, clock: systemClock, logger: silentLogger, problem: (err) => problems.push(err) })
  return problems
}

function runReady (sidecar: ReturnType<typeof envoySidecar>): Promise<void> {
  assert.equal(sidecar.beforeRegister.length, 1)
  return sidecar.beforeRegister[0]!.run({ signal: new AbortController().signal, clock: systemClock, logger: silentLogger })
}

const readyCalls = (log: ReadonlyArray<{ url: string }>): number => log.filter((e) => e.url === '/ready').length

test('waitReady: the startup step blocks until Envoy turns LIVE', async (t) => {
  const { envoy } = await envoyFor(t, { initializeDelayMs: 60_000 })
  const sidecar = sidecarFor(t, { envoyAdmin: envoy.adminUrl, readyTimeoutMs: 10_000 })
  let done = false
  const ready = runReady(sidecar).then(() => { done = true })
  await waitFor('a few /ready polls', () => readyCalls(envoy.adminLog) >= 3)
  assert.equal(done, false, 'still INITIALIZING')
  envoy.initialize()
  await ready
  assert.equal(envoy.adminLog.at(-1)!.status, 200)
})

test('waitReady: a clear TimeoutError naming the admin URL when Envoy never turns LIVE', async (t) => {
  const { envoy } = await envoyFor(t, { initializeDelayMs: 60_000 })
  const sidecar = sidecarFor(t, { envoyAdmin: envoy.adminUrl, readyTimeoutMs: 200 })
  const started = Date.now()
  const err = await runReady(sidecar).then(() => assert.fail('resolved'), (e: unknown) => e)
  assert.ok(err instanceof TimeoutError)
  assert.equal(err.message, `waiting for Envoy at ${envoy.adminUrl} to report LIVE on /ready (last: state INITIALIZING) did not complete within 200 ms`)
  assert.ok(Date.now() - started >= 200)

  const dead = await deadPort()
  t.after(dead.close)
  const nobody = sidecarFor(t, { envoyAdmin: dead.url(), readyTimeoutMs: 100 })
  await assert.rejects(runReady(nobody), (e: Error) => e instanceof TimeoutError && e.message.includes(dead.url()) && e.message.includes('ECONNREFUSED'))
})

test('drain \'listeners\': POST /drain_listeners?inboundonly&graceful; idle connections that will close end the step, as on real Envoy', async (t) => {
  const { envoy } = await envoyFor(t, { drainTimeMs: 60_000 })
  const idle = await openConnections(envoy.url, 2)
  t.after(() => idle.close())
  const sidecar = sidecarFor(t, { envoyAdmin: envoy.adminUrl, drainTimeoutMs: 20_000, idleQuietMs: 200 })
  const problems = await runDrain(sidecar)
  assert.deepEqual(problems, [], 'ended on the idle rule, not on drainTimeoutMs')
  assert.equal(envoy.connections, 2, 'Envoy never closes an idle keep-alive connection')
  const calls = envoy.adminLog.map((e) => `${e.method} ${e.url}`)
  assert.equal(calls[0], 'POST /drain_listeners?inboundonly&graceful')
  assert.equal(calls[1], 'GET /server_info', 'the drain strategy says when every next response closes')
  assert.deepEqual(new Set(calls.slice(2)), new Set([`GET ${CONNECTION_STATS_PATHS.istio}`, `GET ${REQUEST_STATS_PATH}`]))
  assert.ok(calls.filter((c) => c.endsWith(REQUEST_STATS_PATH)).length >= 2, 'the request total was seen not to move')
  // What such a connection meets now: served, and told to close.
  const res = await idle.clients[0]!.request({ method: 'GET', path: '/late' })
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers.connection, 'close')
  await res.body.text()
  await waitFor('the told connection to close', () => envoy.connections === 1)
})

test('drain \'listeners\': without the idle rule (idleQuietMs false) idle connections hold the step to drainTimeoutMs', async (t) => {
  const { envoy } = await envoyFor(t, { drainTimeMs: 60_000 })
  const idle = await openConnections(envoy.url, 2)
  t.after(() => idle.close())
  const sidecar = sidecarFor(t, { envoyAdmin: envoy.adminUrl, drainTimeoutMs: 300, idleQuietMs: false })
  const problems = await runDrain(sidecar)
  assert.deepEqual(problems.map((p) => (p as EnvoyAdminError).code), [ENVOY_ERROR_CODES.TIMEOUT])
  assert.match((problems[0] as Error).message, /2 still open/)
})

test('drain: requests still arriving keep the step going; it ends idleQuietMs after the last one', async (t) => {
  const { envoy } = await envoyFor(t, { drainTimeMs: 60_000 })
  const idle = await openConnections(envoy.url, 1)
  t.after(() => idle.close())
  const sidecar = sidecarFor(t, { envoyAdmin: envoy.adminUrl, drainTimeoutMs: 30_000, idleQuietMs: 1_500 })
  const straggler = new Client(envoy.url)
  t.after(() => straggler.close())
  const requestPolls = (): number => envoy.adminLog.filter((e) => e.url === REQUEST_STATS_PATH).length
  let lastAt = 0
  let sent = 0
  const sending = (async () => {
    // A consumer whose list is stale: requests (each told to close, so on new connections)
    // while the step reads the request stats twenty times.
    while (requestPolls() < 20) {
      lastAt = Date.now() // sent: Envoy counts it after this, and the quiet period starts no sooner
      const res = await straggler.request({ method: 'GET', path: `/late/${sent++}` })
      await res.body.text()
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })()
  const problems = await runDrain(sidecar)
  const endedAt = Date.now()
  await sending
  assert.deepEqual(problems, [])
  assert.ok(sent > 5)
  assert.ok(endedAt - lastAt >= 1_500, `ended ${endedAt - lastAt} ms after the last request, not before idleQuietMs`)
})

test('drain \'healthcheck\': POST /healthcheck/fail, then poll; maxOpenConnections is the bar', async (t) => {
  const { envoy } = await envoyFor(t, { drainTimeMs: 60_000 })
  const idle = await openConnections(envoy.url, 1)
  t.after(() => idle.close())
  const sidecar = sidecarFor(t, { envoyAdmin: envoy.adminUrl, drain: 'healthcheck', maxOpenConnections: 1, connections: { method: 'contour' } })
  assert.deepEqual(await runDrain(sidecar), [])
  assert.deepEqual(envoy.adminLog.map((e) => `${e.method} ${e.url}`), ['POST /healthcheck/fail', `GET ${CONNECTION_STATS_PATHS.contour}`])
  assert.equal(envoy.state, 'DRAINING')
  assert.equal(envoy.connections, 1)
})

test('drain: connections still open at drainTimeoutMs are reported, and the step returns', async (t) => {
  const { envoy, app } = await envoyFor(t, { drainTimeMs: 60_000 })
  const client = new Client(envoy.url)
  t.after(() => client.close())
  const held = client.request({ method: 'GET', path: '/hold' }).then((r) => r.body.text())
  await waitFor('the request to be in flight', () => app.held === 1)
  const sidecar = sidecarFor(t, { envoyAdmin: envoy.adminUrl, drainTimeoutMs: 200 })
  const started = Date.now()
  const problems = await runDrain(sidecar)
  const took = Date.now() - started
  assert.ok(took >= 200, `took ${took} ms, not less than drainTimeoutMs`)
  assert.equal(app.held, 1, 'the step returned while the connection was still open')
  assert.equal(problems.length, 1)
  const err = problems[0] as EnvoyAdminError
  assert.equal(err.code, ENVOY_ERROR_CODES.TIMEOUT)
  assert.match(err.message, /did not drain to ≤ 0 within sidecar\.drainTimeoutMs \(200 ms\): 1 still open/)
  app.release()
  assert.equal(await held, 'released')
})

test('drain: Envoy down is reported with its URL, the step returns and never throws', async (t) => {
  const { envoy } = await envoyFor(t)
  const adminUrl = envoy.adminUrl
  await envoy.close()
  const sidecar = sidecarFor(t, { envoyAdmin: adminUrl })
  const problems = await runDrain(sidecar)
  assert.equal(problems.length, 1, 'one problem for four failed attempts')
  const err = problems[0] as EnvoyAdminError
  assert.equal(err.code, ENVOY_ERROR_CODES.UNREACHABLE)
  assert.equal(err.url, `${adminUrl}/drain_listeners?inboundonly&graceful`)
  assert.match(err.message, /ECONNREFUSED/)
})

test('drain: Envoy going away, stats that never come and a 4xx are each reported', async (t) => {
  const { envoy } = await envoyFor(t, { drainTimeMs: 60_000 })
  const client = new Client(envoy.url)
  t.after(() => client.close())
  const held = client.request({ method: 'GET', path: '/hold' }).then((r) => r.body.text(), () => 'reset')
  await waitFor('a connection to hold', () => envoy.connections === 1)
  const sidecar = sidecarFor(t, { envoyAdmin: envoy.adminUrl, drainTimeoutMs: 10_000 })
  const running = runDrain(sidecar)
  await waitFor('a poll', () => envoy.adminLog.length >= 2)
  await envoy.close()
  const problems = await running
  assert.deepEqual(problems.map((p) => (p as EnvoyAdminError).code), [ENVOY_ERROR_CODES.UNREACHABLE])
  assert.equal(await held, 'reset')

  // Not Envoy, answering 200 to everything: the drain "works", the stats never do.
  const app = await startApp()
  t.after(() => app.close())
  const notEnvoy = sidecarFor(t, { envoyAdmin: app.url, drain: 'healthcheck', drainTimeoutMs: 300 })
  const found = await runDrain(notEnvoy)
  assert.deepEqual(found.map((p) => (p as EnvoyAdminError).code), [ENVOY_ERROR_CODES.STATS_UNAVAILABLE, ENVOY_ERROR_CODES.TIMEOUT],
    'unavailable stats are reported once and never taken for zero: the step waits its whole bound')

  // A 4xx will not change: no retries, no polling.
  const server = await fakeAdmin(() => ({ status: 404, body: 'invalid path. admin commands are:\n' }))
  t.after(() => server.close())
  const wrong = sidecarFor(t, { envoyAdmin: server.url })
  const refusedCall = await runDrain(wrong)
  assert.deepEqual(refusedCall.map((p) => [(p as EnvoyAdminError).code, (p as EnvoyAdminError).statusCode]), [[ENVOY_ERROR_CODES.STATUS, 404]])
  assert.deepEqual(server.requests, [{ method: 'POST', url: '/drain_listeners?inboundonly&graceful' }])
})

test('the steps inside the lameduck lifecycle: register after LIVE, drain Envoy after the window', async (t) => {
  const { envoy } = await envoyFor(t, { initializeDelayMs: 60_000, drainTimeMs: 200 })
  const sidecar = sidecarFor(t, { envoyAdmin: envoy.adminUrl, readyTimeoutMs: 10_000, drainTimeoutMs: 5_000, idleQuietMs: 200 })
  const registry = memoryRegistry()
  const lifecycle = createLifecycle({ registry, beforeRegister: sidecar.beforeRegister, afterWindow: sidecar.afterWindow, windows: { serverCacheMs: 50 } })
  const started = lifecycle.start({ id: 'orders-1', service: 'orders', host: '127.0.0.1', port: envoy.port })
  await waitFor('the startup step to poll /ready', () => readyCalls(envoy.adminLog) >= 2)
  assert.equal(lifecycle.state, 'waiting')
  assert.equal(registry.instances('orders').length, 0, 'not registered while Envoy initializes')
  envoy.initialize()
  await started
  assert.equal(lifecycle.state, 'serving')
  assert.equal(registry.instances('orders').length, 1)

  const idle = await openConnections(envoy.url, 1)
  t.after(() => idle.close())
  const report = await lifecycle.offline('test')
  assert.equal(report.outcome, 'offline')
  assert.deepEqual(report.problems, [])
  assert.equal(envoy.connections, 1, 'the idle connection is left open, as real Envoy leaves it')
  const late = await idle.clients[0]!.request({ method: 'GET', path: '/late' })
  assert.equal(late.headers.connection, 'close', 'and is told to close on its next response')
  await late.body.text()
  const drainAt = envoy.adminLog.find((e) => e.url === '/drain_listeners?inboundonly&graceful')!.at
  assert.ok(drainAt >= report.startedAt + 50, 'Envoy drained only after the window')
  await lifecycle.shutdown()

  // Negative control: Envoy gone before the drain. The sequence still completes, and says why.
  const { envoy: gone } = await envoyFor(t)
  const second = sidecarFor(t, { envoyAdmin: gone.adminUrl })
  const lc = createLifecycle({ afterWindow: second.afterWindow, beforeRegister: second.beforeRegister })
  await lc.start({ id: 'orders-2', service: 'orders', host: '127.0.0.1', port: gone.port })
  await gone.close()
  const cut = await lc.offline('test')
  assert.equal(cut.outcome, 'offline')
  assert.equal(cut.problems.length, 1)
  assert.equal(cut.problems[0]!.step, 'envoy drain')
  assert.ok(cut.problems[0]!.message.includes(gone.adminUrl), cut.problems[0]!.message)
  await lc.shutdown()
})

test('options are validated at the edge, named as the plugin\'s sidecar option', () => {
  const invalid = (options: EnvoySidecarOptions, option: string, text: RegExp): void => {
    assert.throws(() => envoySidecar(options), (e: unknown) => e instanceof InvalidOptionError && e.option === option && text.test(e.message))
  }
  invalid({ envoyAdmin: 'localhost:15000' }, 'sidecar.envoyAdmin', /http:\/\/127\.0\.0\.1:15000/)
  invalid({ drain: 'quit' as 'listeners' }, 'sidecar.drain', /'listeners', 'healthcheck', false/)
  invalid({ maxOpenConnections: -1 }, 'sidecar.maxOpenConnections', /non-negative integer/)
  invalid({ readyTimeoutMs: Number.NaN }, 'sidecar.readyTimeoutMs', /milliseconds/)
  invalid({ minDrainMs: 10_000, drainTimeoutMs: 5_000 }, 'sidecar.minDrainMs', /must not exceed sidecar\.drainTimeoutMs/)
  invalid({ drainBackoff: { factor: 0 } }, 'sidecar.drainBackoff.factor', /must be a number >= 1/)
  assert.deepEqual(envoySidecar({}).options.drainBackoff, { initialMs: 200, factor: 5, maxMs: 5_000, jitter: 0.1 }, 'Contour\'s backoff by default')
  invalid({ connections: { method: 'prom' as 'istio' } }, 'sidecar.connections.method', /'istio', 'contour', 'json'/)
  invalid({ unavailableWaitMs: -1 }, 'sidecar.unavailableWaitMs', /milliseconds/)
  invalid({ idleQuietMs: true as unknown as number }, 'sidecar.idleQuietMs', /milliseconds/)
  assert.equal(envoySidecar({ idleQuietMs: false }).options.idleQuietMs, false)
  invalid({ connections: { inboundListeners: '0.0.0.0_15006' as unknown as string[] } }, 'sidecar.connections.inboundListeners', /array of strings/)
  assert.equal(envoySidecar({ drain: 'healthcheck' }).options.inboundListeners, undefined, 'a healthcheck drain drains every listener, so every one counts')
  assert.deepEqual(envoySidecar({ connections: { inboundListeners: [] } }).options.inboundListeners, [])
  const none = envoySidecar({ waitReady: false, drain: false })
  assert.deepEqual([none.beforeRegister, none.afterWindow], [[], []])
  assert.deepEqual(envoySidecar().options, {
    adminUrl: 'http://127.0.0.1:15000',
    waitReady: true,
    readyTimeoutMs: 60_000,
    readyIntervalMs: 500,
    drain: 'listeners',
    inboundOnly: true,
    skipExit: false,
    maxOpenConnections: 0,
    minDrainMs: 0,
    drainTimeoutMs: 30_000,
    checkIntervalMs: 1000,
    idleQuietMs: 2000,
    unavailableWaitMs: 5000,
    inboundListeners: ['0.0.0.0_15006', '[__]_15006'],
    drainAttempts: 4,
    drainBackoff: { initialMs: 200, factor: 5, maxMs: 5000, jitter: 0.1 }
  })
})
