import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { InvalidOptionError, TimeoutError, virtualClock, type VirtualClock } from '@lameduck/core'
import { CONNECTION_STATS_PATHS, ENVOY_ERROR_CODES, EnvoyAdminError, envoyAdmin, type ConnectionCountMethod } from '../src/index.ts'
import { closedPort, fakeAdmin } from './fake-admin.ts'
import { constructedSections, DOCUMENTED_COUNTS, fixture } from './fixtures.ts'

async function serve (t: { after: (fn: () => Promise<void>) => void }, handler: Parameters<typeof fakeAdmin>[0]): Promise<Awaited<ReturnType<typeof fakeAdmin>>> {
  const server = await fakeAdmin(handler)
  t.after(() => server.close())
  return server
}

const clients: Array<{ close(): Promise<void> }> = []
after(async () => { for (const c of clients) await c.close() })
function client (options: Parameters<typeof envoyAdmin>[0]): ReturnType<typeof envoyAdmin> {
  const c = envoyAdmin(options)
  clients.push(c)
  return c
}

test('activeConnections sends each method\'s exact query and returns the documented sums', async (t) => {
  for (const { file, method, expected, excludePorts } of DOCUMENTED_COUNTS) {
    const body = file === null ? '' : fixture(file)
    const server = await serve(t, () => ({ body }))
    const admin = client({ url: server.url, connections: { excludePorts } })
    assert.equal(await admin.activeConnections({ method }), expected, `${file ?? 'empty'}`)
    assert.deepEqual(server.requests, [{ method: 'GET', url: CONNECTION_STATS_PATHS[method] }])
    await server.close()
  }
  assert.equal(CONNECTION_STATS_PATHS.istio, '/stats?usedonly&filter=downstream_cx_active$')
  assert.equal(CONNECTION_STATS_PATHS.contour, '/stats/prometheus?filter=^http\\..*\\.downstream_cx_active$')
  assert.equal(CONNECTION_STATS_PATHS.json, '/stats?filter=^listener\\..*\\.downstream_cx_active$&format=json')
})

test('the JSON method reads /stats?format=json', async (t) => {
  const { json, text, prometheus } = constructedSections()
  const bodies: Record<ConnectionCountMethod, string> = { json, istio: text, contour: prometheus }
  const server = await serve(t, (req) => ({ body: req.url!.includes('format=json') ? bodies.json : req.url!.startsWith('/stats/prometheus') ? bodies.contour : bodies.istio }))
  const admin = client({ url: server.url })
  for (const method of ['istio', 'contour', 'json'] as const) assert.equal(await admin.activeConnections({ method }), 3, method)
})

test('admin errors are typed, coded and carry the URL', async (t) => {
  const server = await serve(t, (req) => {
    if (req.url === '/healthcheck/fail') return { status: 405, body: 'Method GET not allowed, POST required.' }
    if (req.url === '/slow') return { hang: true }
    if (req.url === '/server_info') return { body: 'not json' }
    if (req.url === '/ready') return { status: 200, body: 'OK\n' }
    if (req.url === '/boom') return { status: 500, body: 'upstream exploded\n' }
    return { status: 404, body: 'invalid path. admin commands are:\n' }
  })
  // A bound no starved machine reaches for the answers; the short one only where the timeout is the subject.
  const admin = client({ url: server.url, timeoutMs: 30_000 })
  const hasty = client({ url: server.url, timeoutMs: 150 })
  const expectError = async (p: Promise<unknown>, code: string, url: string, statusCode?: number): Promise<EnvoyAdminError> => {
    const err = await p.then(() => assert.fail('expected a rejection'), (e: unknown) => e)
    assert.ok(err instanceof EnvoyAdminError, String(err))
    assert.equal(err.code, code)
    assert.equal(err.url, url)
    assert.ok(err.message.includes(url), err.message)
    assert.equal(err.statusCode, statusCode)
    return err
  }

  await t.test('405 for a wrong method', async () => {
    const err = await expectError(admin.request('GET', '/healthcheck/fail'), ENVOY_ERROR_CODES.METHOD, `${server.url}/healthcheck/fail`, 405)
    assert.equal(err.body, 'Method GET not allowed, POST required.')
  })
  await t.test('404 for a wrong path, with a hint', async () => {
    const err = await expectError(admin.okHealthcheck(), ENVOY_ERROR_CODES.STATUS, `${server.url}/healthcheck/ok`, 404)
    assert.match(err.message, /answered 404: invalid path\. admin commands are:.*admin port/)
  })
  await t.test('5xx', async () => {
    await expectError(admin.request('GET', '/boom'), ENVOY_ERROR_CODES.STATUS, `${server.url}/boom`, 500)
  })
  await t.test('timeout', async () => {
    // The TIMEOUT code is the client's own deadline firing, not the slow answer arriving.
    await expectError(hasty.request('GET', '/slow'), ENVOY_ERROR_CODES.TIMEOUT, `${server.url}/slow`)
  })
  await t.test('bad bodies', async () => {
    await expectError(admin.serverInfo(), ENVOY_ERROR_CODES.RESPONSE, `${server.url}/server_info`, 200)
    await expectError(admin.ready(), ENVOY_ERROR_CODES.RESPONSE, `${server.url}/ready`, 200)
  })
  await t.test('connection refused', async () => {
    const port = await closedPort()
    const down = client({ url: `http://127.0.0.1:${port}` })
    const err = await expectError(down.drainListeners({ inboundOnly: true }), ENVOY_ERROR_CODES.UNREACHABLE, `http://127.0.0.1:${port}/drain_listeners?inboundonly&graceful`)
    assert.match(err.message, /ECONNREFUSED/)
    await expectError(down.activeConnections(), ENVOY_ERROR_CODES.UNREACHABLE, `http://127.0.0.1:${port}${CONNECTION_STATS_PATHS.istio}`)
  })
  await t.test('an aborted signal rejects with its own reason', async () => {
    const ac = new AbortController()
    const reason = new Error('shutting down')
    setTimeout(() => ac.abort(reason), 20)
    await assert.rejects(admin.request('GET', '/slow', { signal: ac.signal, timeoutMs: 5000 }), (e) => e === reason)
  })
})

test('mutating calls POST the documented paths with presence-only flags', async (t) => {
  const server = await serve(t, () => ({ body: 'OK\n' }))
  const admin = client({ url: server.url + '/' })
  await admin.failHealthcheck()
  await admin.okHealthcheck()
  await admin.drainListeners({ inboundOnly: true, graceful: true })
  await admin.drainListeners({ graceful: true })
  await admin.drainListeners({ inboundOnly: true, graceful: true, skipExit: true })
  await admin.drainListeners({ graceful: false })
  await admin.drainListeners()
  await admin.quit()
  assert.deepEqual(server.requests.map((r) => `${r.method} ${r.url}`), [
    'POST /healthcheck/fail',
    'POST /healthcheck/ok',
    'POST /drain_listeners?inboundonly&graceful',
    'POST /drain_listeners?graceful',
    'POST /drain_listeners?inboundonly&graceful&skip_exit',
    'POST /drain_listeners',
    'POST /drain_listeners?graceful',
    'POST /quitquitquit'
  ])
})

test('ready() reads 200 and 503 bodies; serverInfo() reads the state', async (t) => {
  let state = 'INITIALIZING'
  const server = await serve(t, (req) => req.url === '/server_info'
    ? { body: fixture('envoy_server_info_docs_sample.json'), headers: { 'content-type': 'application/json' } }
    : { status: state === 'LIVE' ? 200 : 503, body: `${state}\n` })
  const admin = client({ url: server.url })
  for (const s of ['PRE_INITIALIZING', 'INITIALIZING', 'DRAINING', 'LIVE']) {
    state = s
    assert.equal(await admin.ready(), s)
  }
  const info = await admin.serverInfo()
  assert.equal(info.state, 'LIVE')
  assert.equal(info.command_line_options?.drain_time, '600s')
})

test('waitReady resolves on LIVE and times out naming the admin URL and the last state', async (t) => {
  let live = false
  const server = await serve(t, () => live ? { body: 'LIVE\n' } : { status: 503, body: 'INITIALIZING\n' })
  const admin = client({ url: server.url })
  const waiting = admin.waitReady({ timeoutMs: 5000, intervalMs: 10 })
  setTimeout(() => { live = true }, 50)
  await waiting
  live = false
  const err = await admin.waitReady({ timeoutMs: 100, intervalMs: 20 }).catch((e: unknown) => e)
  assert.ok(err instanceof TimeoutError)
  assert.equal(err.code, 'LAMEDUCK_ERR_TIMEOUT')
  assert.match(err.message, new RegExp(`Envoy at ${server.url} to report LIVE on /ready \\(last: state INITIALIZING\\) did not complete within 100 ms`))
})

test('waitForConnections: down to max, not before minDrainMs, stops at the deadline', async (t) => {
  const counts = [3, 2, 1, 0, 0, 0, 0, 0, 0]
  let polls = 0
  const server = await serve(t, () => ({ body: `listener.127.0.0.1_8080.downstream_cx_active: ${counts[Math.min(polls++, counts.length - 1)]}\n` }))
  const admin = client({ url: server.url })
  const seen: number[] = []
  const r = await admin.waitForConnections({ max: 1, intervalMs: 5, onPoll: (n) => seen.push(n) })
  assert.deepEqual([r.drained, r.outcome, r.count, seen], [true, 'drained', 1, [3, 2, 1]])

  polls = 0
  const clock = virtualClock()
  const r2 = await drive(clock, admin.waitForConnections({ max: 0, minDrainMs: 10_000, intervalMs: 1000, clock }))
  assert.equal(r2.outcome, 'drained')
  assert.equal(r2.elapsedMs, 10_000, 'zero connections are not enough before minDrainMs')

  counts.fill(2)
  const r3 = await drive(clock, admin.waitForConnections({ max: 0, intervalMs: 1000, timeoutMs: 5000, clock }))
  assert.deepEqual([r3.drained, r3.outcome, r3.count, r3.polls, r3.elapsedMs], [false, 'deadline', 2, 6, 5000])
})

/** Advances the virtual clock whenever the code under test waits on it (HTTP runs in real time). */
async function drive<T> (clock: VirtualClock, promise: Promise<T>): Promise<T> {
  const state = { done: false }
  const settled = promise.finally(() => { state.done = true })
  settled.catch(() => {})
  while (!state.done) {
    if (clock.pending > 0) await clock.advance(1000)
    else await new Promise((resolve) => setTimeout(resolve, 1))
  }
  return settled
}

test('waitForConnections keeps polling through -1 and errors, and stops when Envoy is gone', async (t) => {
  let n = 0
  const server = await serve(t, () => {
    n++
    if (n === 1) return { body: '' }
    if (n === 2) return { status: 503, body: 'no\n' }
    return { body: 'listener.127.0.0.1_8080.downstream_cx_active: 0\n' }
  })
  const admin = client({ url: server.url })
  const errors: unknown[] = []
  const r = await admin.waitForConnections({ intervalMs: 5, onError: (e) => errors.push(e) })
  assert.equal(r.outcome, 'drained')
  assert.deepEqual(errors.map((e) => (e as EnvoyAdminError).code), [ENVOY_ERROR_CODES.STATS_UNAVAILABLE, ENVOY_ERROR_CODES.STATUS])

  const down = client({ url: `http://127.0.0.1:${await closedPort()}` })
  const r2 = await down.waitForConnections({ intervalMs: 5, timeoutMs: 10_000 })
  assert.deepEqual([r2.outcome, r2.polls], ['unreachable', 1])
})

test('options are validated at the edge with the option name', () => {
  assert.throws(() => envoyAdmin({ url: 'localhost:15000' }), (e: unknown) => e instanceof InvalidOptionError && e.option === 'envoyAdmin.url' && /http:\/\/127\.0\.0\.1:15000/.test(e.message))
  assert.throws(() => envoyAdmin({ url: 'ftp://x' }), /envoyAdmin\.url: must be an http/)
  assert.throws(() => envoyAdmin({ url: 'http://x/?a' }), /query/)
  assert.throws(() => envoyAdmin({ timeoutMs: 0 }), /envoyAdmin\.timeoutMs: must be a positive number/)
  assert.throws(() => envoyAdmin({ connections: { method: 'prom' as 'istio' } }), /envoyAdmin\.connections\.method: must be one of 'istio', 'contour', 'json'/)
  assert.throws(() => envoyAdmin({ connections: { excludePorts: [70000] } }), /excludePorts/)
  assert.equal(envoyAdmin().url, 'http://127.0.0.1:15000')
})
