import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { Writable } from 'node:stream'
import pino from 'pino'
import { request } from 'undici'
import { InvalidTransitionError, memoryRegistry, type Logger } from '@lameduck/core'
import { attach, NotListeningError } from '@lameduck/node'
import { appHandler, startServer, stop, until } from './helpers.ts'

interface Line { level: number, msg: string, lameduck?: unknown, [k: string]: unknown }

/** A pino logger keeping every line, parsed, in order. */
function memoryLog (): { logger: Logger, lines: Line[] } {
  const lines: Line[] = []
  const stream = new Writable({ write (chunk: Buffer, _e, done) { for (const t of String(chunk).split('\n')) if (t !== '') lines.push(JSON.parse(t) as Line); done() } })
  return { logger: pino({ level: 'debug' }, stream) as unknown as Logger, lines }
}

test('/health/live on the app port says only the state; the readiness error (a secret) goes to the log and the admin /status', async (t) => {
  const secret = 'postgres://app:hunter2@db.internal:5432/orders'
  const log = memoryLog()
  const s = await startServer({ readiness: [() => { throw new Error(`connect ECONNREFUSED ${secret}`) }], readinessTimeoutMs: 200, logger: log.logger })
  t.after(() => stop(s))
  await until(async () => (await request(`${s.url}/health/live`)).statusCode === 503, '/health/live to turn 503')
  const live = await request(`${s.url}/health/live`)
  const text = await live.body.text()
  assert.equal(live.statusCode, 503)
  assert.deepEqual(JSON.parse(text), { state: 'waiting', error: 'startup failed' })
  assert.doesNotMatch(text, /hunter2|postgres:/, 'nothing of the error on the public port')
  const status = await (await request(`${s.admin}/status`)).body.json() as { broken: string }
  assert.match(status.broken, /readiness\[0\] threw: connect ECONNREFUSED postgres:/, 'the detail is on the admin /status')
  assert.ok(log.lines.some((l) => l.level === 50 && /startup failed/.test(l.msg) && /readiness\[0\] threw/.test(l.msg)), 'and in the log')
})

test('/offline and /online before listen() answer 409 "not listening yet"; the handle rejects with NotListeningError; after listen it goes online', async (t) => {
  const registry = memoryRegistry()
  const server = createServer(appHandler())
  const handle = await attach(server, { service: 'orders', host: '127.0.0.1', registry, windows: { clientFetchMs: 200 }, warmupMs: 0, signals: false, admin: { port: 0 }, logger: memoryLog().logger })
  t.after(async () => { server.close(); await handle.close() })
  for (const path of ['/offline', '/offline?wait=true', '/online', '/online?wait=1']) {
    const res = await request(`${handle.adminUrl!}${path}`, { method: 'POST' })
    assert.equal(res.statusCode, 409, path)
    const body = await res.body.json() as { error: string, state: string }
    assert.equal(body.error, 'not listening yet')
    assert.equal(body.state, 'starting')
  }
  await assert.rejects(handle.offline(), (err: Error & { code?: string }) => err instanceof NotListeningError && err instanceof InvalidTransitionError && err.code === 'LAMEDUCK_ERR_INVALID_TRANSITION')
  await assert.rejects(handle.online(), NotListeningError)
  assert.equal(handle.state, 'starting', 'nothing changed')
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  await until(() => handle.state === 'serving', 'serving after listen (was stuck before)')
  assert.equal(registry.registered('orders').length, 1)
  const off = await request(`${handle.adminUrl!}/offline?wait=true`, { method: 'POST' })
  assert.equal(off.statusCode, 200)
  await off.body.dump()
  const on = await request(`${handle.adminUrl!}/online?wait=true`, { method: 'POST' })
  assert.equal(on.statusCode, 200)
  await on.body.dump()
  assert.equal(handle.state, 'serving')
})

test('?wait= takes the usual boolean spellings and refuses anything else with 400 naming the parameter', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 100 }, maxRequestMs: 1_000 })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  for (const bad of ['maybe', '', '2', 'truee', 'nope', '%ff', 'true&wait=false']) {
    const res = await request(`${s.admin}/offline?wait=${bad}`, { method: 'POST' })
    assert.equal(res.statusCode, 400, `wait=${bad}`)
    const body = await res.body.json() as { parameter: string, message: string }
    assert.equal(body.parameter, 'wait')
    assert.match(body.message, /^\?wait= must be true or false \(also 1\/0, yes\/no, on\/off, any case, or a bare \?wait\), got /)
    assert.equal(s.lameduck.state, 'serving', `wait=${bad} changed nothing`)
  }
  const waits = async (query: string): Promise<boolean> => {
    const off = await request(`${s.admin}/offline${query}`, { method: 'POST' })
    const code = off.statusCode
    await off.body.dump()
    assert.ok(code === 200 || code === 202, `${query}: ${code}`)
    const on = await request(`${s.admin}/online?wait=true`, { method: 'POST' })
    await on.body.dump()
    return code === 200
  }
  for (const q of ['?wait=false', '?wait=FALSE', '?wait=0', '?wait=no', '?wait=No', '?wait=off', '', '?other=1']) assert.equal(await waits(q), false, q)
  for (const q of ['?wait=true', '?wait=TRUE', '?wait=1', '?wait=yes', '?wait=on', '?wait', '?x=1&wait']) assert.equal(await waits(q), true, q)
})

test('tokens no client can send are refused at option validation', async () => {
  const server = createServer()
  for (const token of ['          ', ' leading-space', 'trailing-space ', 'trailing-newline\n', 'tab\tinside-token', 'bell\u0007-token', 'non-ascii-tökén', 'del-char\u007f-token']) {
    await assert.rejects(attach(server, { service: 'x', signals: false, admin: { port: 0, token } }),
      (err: Error & { code?: string }) => err.code === 'LAMEDUCK_ERR_INVALID_OPTION' && /^admin\.token: must be printable ASCII/.test(err.message), JSON.stringify(token))
  }
  const ok = await attach(server, { service: 'x', signals: false, admin: { port: 0, token: 'has inner spaces ok' }, logger: memoryLog().logger })
  const res = await request(`${ok.adminUrl!}/status`, { headers: { authorization: 'Bearer has inner spaces ok' } })
  assert.equal(res.statusCode, 200, 'an accepted token authenticates')
  await res.body.dump()
  await ok.close()
})

test('a token over plain HTTP on a non-loopback admin host is warned about once; on loopback not at all', async () => {
  for (const [host, warned] of [['0.0.0.0', 1], ['127.0.0.1', 0]] as const) {
    const log = memoryLog()
    const handle = await attach(createServer(), { service: 'x', signals: false, admin: { host, port: 0, token: 's3cret-admin-token' }, logger: log.logger })
    await handle.close()
    assert.equal(log.lines.filter((l) => /token crosses the network in clear text/.test(l.msg)).length, warned, host)
  }
})

test('a listen address that cannot reach the advertised host is warned about once', async () => {
  const cases: Array<[string, string, boolean]> = [
    ['127.0.0.1', '192.0.2.2', true],
    ['127.0.0.1', '127.0.0.1', false],
    ['0.0.0.0', '192.0.2.2', false]
  ]
  for (const [listen, advertised, warned] of cases) {
    const log = memoryLog()
    const server = createServer(appHandler())
    const handle = await attach(server, { service: 'x', host: advertised, signals: false, admin: false, warmupMs: 0, logger: log.logger })
    await new Promise<void>((resolve) => server.listen(0, listen, resolve))
    await until(() => handle.state === 'serving', 'serving')
    const warnings = log.lines.filter((l) => l.level === 40 && /advertising .* to the registry, but/.test(l.msg))
    assert.equal(warnings.length, warned ? 1 : 0, `${listen} → ${advertised}`)
    if (warned) assert.match(warnings[0]!.msg, /listens on loopback \(127\.0\.0\.1\) only, so other machines cannot reach 192\.0\.2\.2/)
    server.close()
    await handle.close()
  }
})

test('every log line carries `lameduck` as an object, admin lines included', async (t) => {
  const log = memoryLog()
  const s = await startServer({ logger: log.logger, windows: { clientFetchMs: 100 }, admin: { host: '0.0.0.0', port: 0, token: 's3cret-admin-token' } })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  const admin = s.admin.replace('0.0.0.0', '127.0.0.1')
  const auth = { authorization: 'Bearer s3cret-admin-token' }
  for (const [path, headers] of [['/offline?wait=true', auth], ['/online?wait=true', auth], ['/status', {}], ['/offline?wait=bogus', auth]] as const) {
    await (await request(`${admin}${path}`, { method: path === '/status' ? 'GET' : 'POST', headers })).body.dump()
  }
  const withKey = log.lines.filter((l) => 'lameduck' in l)
  assert.ok(withKey.length >= 6, `lines with the key: ${withKey.length}`)
  assert.ok(log.lines.some((l) => /admin: offline requested/.test(l.msg)))
  for (const l of log.lines) {
    if (!('lameduck' in l)) continue
    assert.equal(typeof l.lameduck, 'object', l.msg)
    assert.notEqual(l.lameduck, null, l.msg)
  }
})

test('/offline on an instance already offline answers 202 with the report of the sequence that took it offline', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 100 } })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  const first = await s.lameduck.offline()
  const res = await request(`${s.admin}/offline`, { method: 'POST' })
  const body = await res.body.json() as { state: string, startedAt: number, report: { startedAt: number, outcome: string } }
  assert.equal(res.statusCode, 202)
  assert.equal(body.state, 'offline')
  assert.equal(body.startedAt, first.startedAt, 'the sequence it joined: the one that took it offline')
  assert.equal(body.report.outcome, 'offline')
})

test('after a failed startup, /online runs the readiness checks again; once they pass it registers and /health/live is 200 again', async (t) => {
  let up = false
  let calls = 0
  const s = await startServer({ readiness: [() => { calls++; return up }], readinessTimeoutMs: 300 })
  t.after(() => stop(s))
  await until(async () => (await request(`${s.url}/health/live`)).statusCode === 503, 'the failed startup')
  const before = calls
  const early = await request(`${s.admin}/online`, { method: 'POST' })
  await early.body.dump()
  await until(() => calls > before, 'the checks to run again')
  assert.deepEqual(s.registry.registered('orders'), [], 'not registered while readiness fails')
  up = true
  await request(`${s.admin}/online`, { method: 'POST' }).then(async (r) => { await r.body.dump() })
  await until(() => s.lameduck.state === 'serving', 'serving')
  assert.equal(s.registry.registered('orders').length, 1)
  assert.equal((await request(`${s.url}/health/live`)).statusCode, 200)
})
