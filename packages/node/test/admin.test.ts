// The admin listener's edges: ?wait= parsing, /offline and /online before the app
// listens, tokens that could never authenticate, the clear-text token warning,
// and what the signal path says it is doing.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { request } from 'undici'
import { memoryRegistry, silentLogger, type Logger } from '@lameduck/core'
import { attach } from '@lameduck/node'
import { appHandler, startServer, stop, until } from './helpers.ts'

function memoryLogger (): Logger & { lines: Array<{ level: string, msg: string }> } {
  const lines: Array<{ level: string, msg: string }> = []
  const at = (level: string) => (_obj: object, msg?: string): void => { lines.push({ level, msg: msg ?? '' }) }
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

test('?wait= takes the usual boolean spellings in any case and refuses anything else with 400', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 200 } })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  for (const bad of ['maybe', '', '2', 'truthy']) {
    const res = await request(`${s.admin}/offline?wait=${bad}`)
    assert.equal(res.statusCode, 400, `wait=${bad}`)
    assert.match(((await res.body.json()) as { message: string }).message, /\?wait= must be true or false/)
    assert.equal(s.lameduck.state, 'serving', 'nothing changed')
  }
  for (const no of ['FALSE', 'no', 'Off', '0']) {
    const res = await request(`${s.admin}/offline?wait=${no}`)
    assert.equal(res.statusCode, 202, `wait=${no} does not wait`)
    await res.body.dump()
    const on = await request(`${s.admin}/online?wait=YES`)
    assert.equal(on.statusCode, 200, 'wait=YES waits')
    await on.body.dump()
  }
})

test('/offline and /online before the app listens answer 409 and change nothing; after listen the app serves and drains', async (t) => {
  const server = createServer(appHandler())
  const registry = memoryRegistry()
  const lameduck = await attach(server, { service: 'x', host: '127.0.0.1', registry, signals: false, admin: { port: 0 }, warmupMs: 0, windows: { clientFetchMs: 100 }, logger: silentLogger })
  t.after(async () => { server.close(); await lameduck.close() })
  for (const path of ['/offline', '/online', '/offline?wait=true']) {
    const res = await request(`${lameduck.adminUrl}${path}`)
    assert.equal(res.statusCode, 409, path)
    assert.match(((await res.body.json()) as { message: string }).message, /not listening yet/)
  }
  await assert.rejects(lameduck.offline(), (err: Error & { code?: string }) => err.code === 'LAMEDUCK_ERR_INVALID_TRANSITION')
  assert.equal(lameduck.state, 'starting')
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  await until(() => lameduck.state === 'serving', 'serving once listening')
  const off = await request(`${lameduck.adminUrl}/offline?wait=true`)
  assert.equal(off.statusCode, 200)
  await off.body.dump()
  assert.equal(registry.registered('x').length, 0)
})

test('admin tokens that could never authenticate are refused at attach', async () => {
  const server = createServer()
  for (const token of [' padded-token', 'padded-token ', '        ', 'tab\there-token', 'new\nline-token', 'tökentökentöken']) {
    await assert.rejects(attach(server, { service: 'x', signals: false, admin: { port: 0, token }, logger: silentLogger }),
      (err: Error & { code?: string }) => err.code === 'LAMEDUCK_ERR_INVALID_OPTION' && /^admin\.token: must be printable ASCII without spaces/.test(err.message), JSON.stringify(token))
  }
})

test('a non-loopback admin with a token warns once that the token crosses the network in clear text', async () => {
  const logger = memoryLogger()
  const handle = await attach(createServer(), { service: 'x', signals: false, admin: { host: '0.0.0.0', port: 0, token: 's3cret-admin-token' }, logger })
  await handle.close()
  assert.equal(logger.lines.filter((l) => l.level === 'warn' && /token crosses the network in clear text/.test(l.msg)).length, 1)
  const quiet = memoryLogger()
  await (await attach(createServer(), { service: 'x', signals: false, admin: { port: 0, token: 's3cret-admin-token' }, logger: quiet })).close()
  assert.equal(quiet.lines.filter((l) => /clear text/.test(l.msg)).length, 0, 'not on loopback')
})

test('a signal while already offline says so (and since when), and the last line says the exit code', async (t) => {
  const logger = memoryLogger()
  const codes: number[] = []
  const s = await startServer({ windows: { clientFetchMs: 100 }, signals: ['SIGWINCH'], terminate: (code) => { codes.push(code) }, logger })
  t.after(() => s.lameduck.close())
  await until(() => s.lameduck.state === 'serving', 'serving')
  await s.lameduck.offline()
  process.kill(process.pid, 'SIGWINCH')
  await until(() => codes.length === 1, 'terminate')
  const said = logger.lines.map((l) => l.msg)
  assert.ok(said.some((m) => /SIGWINCH received in state offline: already offline since \d{4}-\d\d-\d\dT[\d:.]+Z; closing/.test(m)), said.join('\n'))
  assert.ok(!said.some((m) => /running the offline sequence/.test(m)))
  assert.match(said.filter((m) => /SIGWINCH/.test(m)).at(-1)!, /closed \d+ ms after SIGWINCH \(exit code 0\)/)
  assert.match(said.at(-1)!, /ending the process with exit code 0 once its event loop is empty/)
})
