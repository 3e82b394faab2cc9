import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import Fastify from 'fastify'
import { request } from 'undici'
import lameduck from '@lameduck/fastify'
import { startApp, until } from './helpers.ts'

test('wrong or missing token → 401 and no state change', async (t) => {
  const { app, admin } = await startApp({ admin: { port: 0, token: 's3cret-token' } })
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  for (const headers of [{}, { authorization: 'Bearer wrong-token!' }, { authorization: 's3cret-token' }]) {
    const res = await request(`${admin}/offline`, { method: 'POST', headers })
    assert.equal(res.statusCode, 401)
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="lameduck"')
    await res.body.dump()
  }
  assert.equal(app.lameduck.state, 'serving')
  const ok = await request(`${admin}/status`, { headers: { authorization: 'Bearer s3cret-token' } })
  assert.equal(ok.statusCode, 200)
  assert.equal(((await ok.body.json()) as { state: string }).state, 'serving')
})

test('admin: unknown routes 404, no admin route on the app listener, /metrics in Prometheus text', async (t) => {
  const { app, admin, url } = await startApp()
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  assert.equal((await request(`${admin}/nope`)).statusCode, 404)
  const wrongMethod = await request(`${admin}/offline`, { method: 'DELETE' })
  assert.equal(wrongMethod.statusCode, 405, 'a known route, a method it does not take')
  assert.equal(wrongMethod.headers.allow, 'GET, POST')
  await wrongMethod.body.dump()
  assert.equal((await request(`${url}/offline`)).statusCode, 404, 'not on the app listener')
  const metrics = await request(`${admin}/metrics`)
  assert.match(String(metrics.headers['content-type']), /^text\/plain; version=0\.0\.4/)
  const text = await metrics.body.text()
  assert.match(text, /^lameduck_state\{state="serving"\} 1$/m)
  assert.match(text, /^lameduck_state\{state="draining"\} 0$/m)
  assert.match(text, /^lameduck_window_seconds 0\.3$/m)
  assert.match(text, /^lameduck_inflight_requests 0$/m, 'admin requests are not application traffic')
  assert.match(text, /^lameduck_requests_total 1$/m, 'the one request to the app listener (the 404)')
})

test('every invalid option fails register with an error naming it', async () => {
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{}, /service: required/],
    [{ service: 'x', delay: -5 }, /delay: must be a non-negative number of milliseconds, got number -5/],
    [{ service: 'x', delay: '5s' }, /delay: .*got '5s'/],
    [{ service: 'x', warmup: Number.NaN }, /warmup: must be a non-negative/],
    [{ service: 'x', weight: -1 }, /weight: must be a non-negative number/],
    [{ service: 'x', windows: 'eureka' }, /windows: unknown preset 'eureka'/],
    [{ service: 'x', windows: 'eureka-ribbon', shutdownTimeoutMs: 60_000 }, /shutdownTimeoutMs: 60000 ms is shorter than the propagation window \(90000 ms/],
    [{ service: 'x', admin: { host: '0.0.0.0' } }, /admin\.token: required when admin\.host is not loopback/],
    [{ service: 'x', admin: { port: 70000 } }, /admin\.port: must be an integer from 0 to 65535, got number 70000/],
    [{ service: 'x', readiness: 'yes' }, /readiness: must be an array of functions/],
    [{ service: 'x', registry: { register () {} } }, /registry: must implement register\(\), deregister\(\) and close\(\)/],
    [{ service: 'x', signals: ['TERM'] }, /signals: must be an array of signal names/],
    [{ service: 'x', sidecar: { envoyAdmin: 'not a url' } }, /sidecar\.envoyAdmin: must be the Envoy admin URL/],
    [{ service: 'x', colour: 'blue' }, /colour: unknown option/]
  ]
  for (const [options, message] of cases) {
    const app = Fastify()
    await assert.rejects(async () => { await app.register(lameduck, { signals: false, admin: false, ...options } as never); await app.ready() }, (err: Error & { code?: string }) => {
      assert.match(err.message, message)
      assert.equal(err.code, 'LAMEDUCK_ERR_INVALID_OPTION')
      return true
    }, JSON.stringify(options))
    await app.close()
  }
})

test('an admin port already in use fails register with an error naming admin.port', async (t) => {
  const blocker = createServer()
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
  t.after(() => blocker.close())
  const port = (blocker.address() as { port: number }).port
  const app = Fastify()
  await assert.rejects(async () => { await app.register(lameduck, { service: 'x', signals: false, admin: { port } }); await app.ready() },
    new RegExp(`admin\\.port: 127\\.0\\.0\\.1:${port} is already in use`))
  await app.close()
})

test('registering the plugin twice fails before a second admin listener or signal handlers start', async () => {
  const app = Fastify()
  const signals = process.listenerCount('SIGTERM')
  await app.register(lameduck, { service: 'x', admin: { port: 0 } })
  await assert.rejects(async () => { await app.register(lameduck, { service: 'x', admin: { port: 0 } }) }, (err: Error & { code?: string }) => err.code === 'LAMEDUCK_ERR_INVALID_OPTION' && /already registered on this app/.test(err.message))
  assert.equal(process.listenerCount('SIGTERM'), signals + 1, 'only the first registration installed handlers')
  await app.close()
  assert.equal(process.listenerCount('SIGTERM'), signals)
})

test('metrics.listener app: Fastify serves /metrics on the app port without a token; the admin API stays off it', async (t) => {
  const { app, url } = await startApp({ metrics: { listener: 'app', path: '/internal/metrics' }, admin: { port: 0, token: 's3cret-admin-token' } })
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  const res = await request(`${url}/internal/metrics`)
  assert.equal(res.statusCode, 200)
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/)
  assert.match(await res.body.text(), /^lameduck_state\{state="serving"\} 1$/m)
  for (const path of ['/offline', '/online', '/status', '/metrics']) assert.equal((await request(`${url}${path}`, { method: 'POST' })).statusCode, 404, path)
  assert.equal(app.lameduck.state, 'serving')
})

test('delay and warmup still work as deprecated aliases of delayMs and warmupMs: one warning each; both names at once is an error', async (t) => {
  const lines: string[] = []
  const logger = { info () {}, error () {}, debug () {}, trace () {}, fatal () {}, child () { return logger }, level: 'info', silent () {}, warn (_o: unknown, msg?: string) { lines.push(String(msg)) } }
  const app = Fastify({ loggerInstance: logger as never })
  t.after(() => app.close())
  await app.register(lameduck, { service: 'x', host: '127.0.0.1', delay: 10, warmup: 5_000, signals: false, admin: false })
  await app.ready()
  assert.equal(lines.filter((l) => /'delay' is deprecated; use 'delayMs'/.test(l)).length, 1)
  assert.equal(lines.filter((l) => /'warmup' is deprecated; use 'warmupMs'/.test(l)).length, 1)
  const both = Fastify()
  t.after(() => both.close())
  await assert.rejects(async () => { await both.register(lameduck, { service: 'x', delay: 10, delayMs: 20, signals: false, admin: false }) }, /delay: is the deprecated name of 'delayMs'; set only 'delayMs'/)
})
