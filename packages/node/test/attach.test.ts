import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server as HttpServer } from 'node:http'
import { Client, request } from 'undici'
import { memoryRegistry, silentLogger, type StartupStep, type DrainStep } from '@lameduck/core'
import { attach } from '@lameduck/node'
import { appHandler, startServer, stop, until } from './helpers.ts'

test('node:http: probes answered at the raw request level, never reaching the app; registers once ready', async (t) => {
  let dbUp = false
  const s = await startServer({ readiness: [async () => dbUp], readinessTimeoutMs: 10_000 })
  t.after(() => stop(s))
  const before = await request(`${s.url}/health/ready`)
  assert.equal(before.statusCode, 503)
  assert.deepEqual(await before.body.json(), { state: 'waiting' })
  assert.equal((await request(`${s.url}/health/live?probe=1`)).statusCode, 200, 'a query string does not hide the route')
  dbUp = true
  await until(async () => (await request(`${s.url}/health/ready`)).statusCode === 200, 'ready')
  assert.equal(s.registry.registered('orders').length, 1)
  const head = await request(`${s.url}/health/ready`, { method: 'HEAD' })
  assert.equal(head.statusCode, 200)
  assert.deepEqual(s.seen, [], 'the app never saw a probe')
  assert.equal((await request(`${s.url}/hello`)).statusCode, 200)
  assert.deepEqual(s.seen, ['/hello'])
})

test('node:http: offline keeps serving with the drain marks, the idle keep-alive connection goes, drains in flight', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 1_200 }, maxRequestMs: 5_000 })
  t.after(() => stop(s))
  ;(s.server as HttpServer).keepAliveTimeout = 3_000 // Keep-Alive: timeout=3: undici drops the idle connection 1 s after its response
  await until(() => s.lameduck.state === 'serving', 'serving')
  const client = new Client(s.url, { keepAliveTimeout: 60_000 })
  t.after(() => client.close())
  let disconnects = 0
  client.on('disconnect', () => { disconnects++ })
  await (await client.request({ path: '/hello', method: 'GET' })).body.dump()
  const slow = request(`${s.url}/slow?ms=700`)
  await until(() => s.lameduck.lifecycle.inflight.count === 1, 'the slow request in flight')
  const offline = s.lameduck.offline({ reason: 'test' })
  await until(() => s.registry.registered('orders').length === 0, 'deregistered')
  await until(() => disconnects === 1, 'the idle keep-alive connection to go (its keep-alive ran out)')
  const during = await request(`${s.url}/hello`)
  assert.equal(during.statusCode, 200)
  assert.equal(during.headers.connection, 'close')
  // Draining, or offline already when a loaded machine took longer than the window to get here: marked either way.
  assert.match(String(during.headers['x-lameduck-state']), /^(draining|offline)$/)
  await during.body.dump()
  assert.equal((await request(`${s.url}/health/ready`)).statusCode, 503)
  assert.equal((await slow).statusCode, 200)
  const report = await offline
  assert.equal(report.outcome, 'offline')
  assert.equal(s.lameduck.state, 'offline')
  const status = s.lameduck.status() as { connections: { open: number, upgraded: number, closedWhileDraining: number }, adminUrl: string }
  assert.ok(status.connections.closedWhileDraining >= 2)
  assert.equal(status.adminUrl, s.admin)
  const admin = await (await request(`${s.admin}/status`)).body.json() as Record<string, unknown>
  assert.deepEqual(Object.keys(admin).sort(), Object.keys(status).sort(), 'one status document for the admin and the handle')
})

test('attach twice fails before starting a second admin listener; close() detaches and allows attaching again', async (t) => {
  const server = createServer(appHandler())
  const options = { service: 'x', signals: false as const, admin: { port: 0 }, logger: silentLogger }
  const first = await attach(server, options)
  await assert.rejects(attach(server, options), (err: Error & { code?: string }) => err.code === 'LAMEDUCK_ERR_INVALID_OPTION' && /already attached/.test(err.message))
  await first.close()
  assert.equal(Object.hasOwn(server, 'emit'), false, 'emit restored')
  const second = await attach(server, options)
  t.after(() => second.close())
  assert.equal(first.state, 'stopped')
})

test('attach to a server already listening starts the lifecycle at once', async (t) => {
  const server = createServer(appHandler())
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const registry = memoryRegistry()
  const lameduck = await attach(server, { service: 'x', host: '127.0.0.1', registry, signals: false, admin: false, warmupMs: 0, logger: silentLogger })
  t.after(async () => { server.close(); await lameduck.close() })
  await until(() => lameduck.state === 'serving', 'serving')
  assert.equal(registry.registered('x')[0]?.port, (server.address() as { port: number }).port)
})

test('the signal path with an injected terminate: offline sequence, connections go, server closed, terminate(0)', async (t) => {
  const codes: number[] = []
  const listeners = process.listenerCount('SIGWINCH')
  const s = await startServer({ signals: ['SIGWINCH'], terminate: (code) => { codes.push(code) } })
  t.after(() => s.lameduck.close())
  await until(() => s.lameduck.state === 'serving', 'serving')
  const states: string[] = []
  s.lameduck.on('state', (c) => states.push(c.to))
  const slow = request(`${s.url}/slow?ms=400`)
  await until(() => s.lameduck.lifecycle.inflight.count === 1, 'in flight')
  process.kill(process.pid, 'SIGWINCH')
  assert.equal((await slow).statusCode, 200, 'the request in flight completes')
  await until(() => codes.length === 1, 'terminate')
  assert.deepEqual(codes, [0])
  assert.deepEqual(states, ['draining', 'offline', 'closing', 'stopped'])
  assert.equal(s.server.listening, false)
  assert.equal(process.listenerCount('SIGWINCH'), listeners, 'handlers removed once done')
})

test('sidecar as a steps object: beforeRegister before registering, afterWindow after the window, close at the end', async (t) => {
  const order: string[] = []
  const registry = memoryRegistry()
  const before: StartupStep = { name: 'ready', run: async () => { order.push(`before:${registry.registered('orders').length}`) } }
  const after: DrainStep = { name: 'drain', run: async () => { order.push('after') } }
  const s = await startServer({ registry, sidecar: { beforeRegister: [before], afterWindow: [after], close: async () => { order.push('close') } } })
  await until(() => s.lameduck.state === 'serving', 'serving')
  s.lameduck.on('goingAway', (e) => order.push(`goingAway:${e.cause}`))
  await s.lameduck.offline()
  await stop(s)
  // goingAway:window and the afterWindow step both happen when the window ends, in either order.
  assert.deepEqual([order.slice(0, 1), order.slice(1, 3).sort(), order.slice(3)], [['before:0'], ['after', 'goingAway:window'], ['goingAway:closing', 'close']])
})

test('invalid options name the option: logger, serveRoutes, terminate, sidecar steps, the server', async () => {
  const server = createServer()
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ logger: console.log }, /^logger: must be a pino-compatible logger/],
    [{ serveRoutes: 'yes' }, /^serveRoutes: must be true or false, got 'yes'$/],
    [{ terminate: 1 }, /^terminate: must be a function/],
    [{ sidecar: { afterWindow: [{}] } }, /^sidecar\.afterWindow: must be an array of \{ name, run\(ctx\) \} steps/],
    // Checked once, by core's resolveLifecycleOptions() or envoySidecar(), under the name the user wrote.
    [{ delayMs: -1 }, /^delayMs: must be a non-negative number of milliseconds, got number -1$/],
    [{ delay: -1 }, /^delay: must be a non-negative number of milliseconds/],
    [{ delay: 5, delayMs: 6 }, /^delay: is the deprecated name of 'delayMs'; set only 'delayMs'/],
    [{ weight: -1 }, /^weight: must be a non-negative number/],
    [{ registry: {} }, /^registry: must implement register\(\), deregister\(\) and close\(\)/],
    [{ sidecar: { envoyAdmin: 'ftp://127.0.0.1:15000' } }, /^sidecar\.envoyAdmin: must be an http:\/\/ or https:\/\/ URL/],
    [{ sidecar: { envoyAdmin: 'http://127.0.0.1:15000', drainTimeoutMs: -1 } }, /^sidecar\.drainTimeoutMs: must be a non-negative number/],
    [{ sidecar: { waitReady: true } }, /^sidecar\.envoyAdmin: required: the Envoy admin URL/],
    [{ admin: { port: 70000 } }, /^admin\.port: must be an integer from 0 to 65535, got number 70000$/],
    [{ windos: 'kubernetes' }, /^windos: unknown option \(did you mean 'windows'\?\)/],
    [{ warmp: 1 }, /^warmp: unknown option \(did you mean 'warmupMs'\?\); known options are (?![\s\S]*\bwarmup\b)/]
  ]
  for (const [extra, message] of cases) {
    await assert.rejects(attach(server, { service: 'x', signals: false, admin: false, ...extra } as never), (err: Error & { code?: string }) => err.code === 'LAMEDUCK_ERR_INVALID_OPTION' && message.test(err.message))
  }
  await assert.rejects(attach({} as never, { service: 'x' }), /server: attach\(\) takes a node:http/)
})
