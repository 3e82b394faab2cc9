// HTTP/1 keep-alive while draining: the server never closes an idle connection
// before the Keep-Alive timeout it advertised ran out. HTTP/1.1 has no safe way
// for a server to close one: a request the client sends as the close crosses it
// is reset. A client that honours the hint (undici, fetch) drops it first.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server as HttpServer } from 'node:http'
import { Client } from 'undici'
import { memoryRegistry, type Logger } from '@lameduck/core'
import { attach } from '@lameduck/node'
import { idleCloseMs, NO_HINT_IDLE_MS } from '../src/keep-alive.ts'
import { appHandler, startServer, stop, until } from './helpers.ts'

function capture (): Logger & { warnings: string[] } {
  const warnings: string[] = []
  const noop = (): void => {}
  return { warnings, debug: noop, info: noop, error: noop, warn: (_obj, msg) => { warnings.push(msg ?? '') } }
}

test('idleCloseMs: the advertised timeout plus Node\'s buffer; no timeout falls back to Node\'s defaults', () => {
  const server = createServer()
  server.keepAliveTimeout = 4_000
  ;(server as { keepAliveTimeoutBuffer?: number }).keepAliveTimeoutBuffer = 1_000
  assert.equal(idleCloseMs(server), 5_000)
  ;(server as { keepAliveTimeoutBuffer?: number }).keepAliveTimeoutBuffer = undefined
  assert.equal(idleCloseMs(server), 4_000, 'a Node without the buffer closes at the timeout itself')
  server.keepAliveTimeout = 0
  assert.equal(idleCloseMs(server), NO_HINT_IDLE_MS)
})

test('while draining, the idle HTTP/1 connection is dropped by its client at the advertised timeout, never closed under it', async (t) => {
  // Window 3 s. keepAliveTimeout 4 s: the response says `Keep-Alive: timeout=4`, and undici drops the
  // connection 2 s before that, i.e. 2 s after its last response. Two idle sweeps (the HTTP/2 rule)
  // would close it from the server about 1 s into the drain instead: the close a request can cross.
  const s = await startServer({ windows: { clientFetchMs: 3_000 } })
  t.after(() => stop(s))
  ;(s.server as HttpServer).keepAliveTimeout = 4_000
  await until(() => s.lameduck.state === 'serving', 'serving')
  const client = new Client(s.url, { keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 })
  t.after(() => client.close())
  const disconnects: Array<string | undefined> = []
  client.on('disconnect', (_origin, _targets, err) => { disconnects.push((err as { code?: string }).code) })
  const res = await client.request({ path: '/hello', method: 'GET' })
  assert.equal(res.headers['keep-alive'], 'timeout=4')
  await res.body.dump()
  const offline = s.lameduck.offline({ reason: 'test' })
  await until(() => disconnects.length === 1, 'the idle connection to go')
  assert.deepEqual(disconnects, ['UND_ERR_INFO'], 'the client dropped it (socket idle timeout); the server did not close it under the client')
  assert.equal((await offline).outcome, 'offline')
})

test('attach warns at start when idle keep-alive connections can outlive the window, and not when they cannot', async (t) => {
  for (const [keepAliveTimeout, warned] of [[72_000, true], [0, true], [2_000, false]] as const) {
    const logger = capture()
    const server = createServer(appHandler())
    server.keepAliveTimeout = keepAliveTimeout
    const lameduck = await attach(server, { service: 'x', host: '127.0.0.1', registry: memoryRegistry(), windows: { clientFetchMs: 5_000 }, signals: false, admin: false, warmupMs: 0, logger })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    await until(() => lameduck.state === 'serving', 'serving')
    const warning = logger.warnings.find((w) => /keep-alive/.test(w))
    assert.equal(warning !== undefined, warned, `keepAliveTimeout ${keepAliveTimeout}: ${warning ?? 'no warning'}`)
    if (warned) assert.match(warning!, /set the server's keepAliveTimeout below the window/)
    server.close()
    await lameduck.close()
  }
})

test('closing with idle keep-alive connections a client still holds says how many were closed under it', async (t) => {
  const logger = capture()
  const s = await startServer({ windows: { clientFetchMs: 200 }, logger })
  t.after(() => stop(s))
  ;(s.server as HttpServer).keepAliveTimeout = 60_000
  await until(() => s.lameduck.state === 'serving', 'serving')
  const client = new Client(s.url, { keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 })
  t.after(() => client.close())
  await (await client.request({ path: '/hello', method: 'GET' })).body.dump()
  await s.lameduck.shutdown('test')
  assert.ok(logger.warnings.some((w) => /closing 1 idle keep-alive connection\(s\) that clients still hold/.test(w)), logger.warnings.join('\n'))
})

test('behind a sidecar: idle connections (the sidecar\'s upstream pool) are not swept while draining; without one the same connection is', async (t) => {
  const sidecar = { afterWindow: [], beforeRegister: [] }
  const behind = await startServer({ sidecar, windows: { clientFetchMs: 60_000 } })
  const direct = await startServer({ windows: { clientFetchMs: 60_000 } })
  t.after(() => Promise.all([stop(behind), stop(direct)]))
  for (const s of [behind, direct]) (s.server as HttpServer).keepAliveTimeout = 0 // Node closes nothing itself: the sweep is what would
  await until(() => behind.lameduck.state === 'serving' && direct.lameduck.state === 'serving', 'serving')
  const clients = [behind, direct].map((s) => new Client(s.url, { keepAliveTimeout: 600_000, keepAliveMaxTimeout: 600_000 }))
  t.after(() => Promise.all(clients.map((c) => c.close())))
  const gone = [0, 0]
  clients.forEach((c, i) => c.on('disconnect', () => { gone[i]!++ }))
  for (const c of clients) await (await c.request({ path: '/hello', method: 'GET' })).body.dump()
  const offline = [behind, direct].map((s) => s.lameduck.offline())
  await until(() => gone[1] === 1, 'the direct server\'s sweep to close its idle connection')
  assert.equal(gone[0], 0, 'the sidecar\'s idle upstream connection was left open')
  for (const s of [behind, direct]) await s.lameduck.online()
  await Promise.all(offline)
})

test('behind a sidecar the keep-alive check is about the sidecar\'s pool: a short keepAliveTimeout is warned of, 0 and 72 s are not', async (t) => {
  for (const [keepAliveTimeout, warned] of [[5_000, true], [0, false], [72_000, false]] as const) {
    const logger = capture()
    const server = createServer(appHandler())
    server.keepAliveTimeout = keepAliveTimeout
    const lameduck = await attach(server, { service: 'x', host: '127.0.0.1', registry: memoryRegistry(), sidecar: { afterWindow: [] }, windows: { clientFetchMs: 1_000 }, signals: false, admin: false, warmupMs: 0, logger })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    await until(() => lameduck.state === 'serving', 'serving')
    const warning = logger.warnings.find((w) => /keepAliveTimeout/.test(w))
    assert.equal(warning !== undefined, warned, `keepAliveTimeout ${keepAliveTimeout}: ${warning ?? 'no warning'}`)
    if (warned) assert.match(warning!, /behind a sidecar .* 503/)
    server.close()
    await lameduck.close()
  }
})
