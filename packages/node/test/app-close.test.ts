// The app's own server.close() (an existing SIGTERM handler: `server.close(() =>
// process.exit(0))`) must not stop accepting while the instance is still
// registered: the offline sequence runs first, then the server closes and the
// app's callback runs.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { startServer, stop, until } from './helpers.ts'

test('server.close() by the app while serving: deregistered at once, new requests still served through the window, then closed and the callback called', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 800 } })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  assert.equal(s.registry.registered('orders').length, 1)
  let closedAt = 0
  let closeErr: unknown = 'not called'
  s.server.close((err) => { closeErr = err; closedAt = Date.now() })
  await until(() => s.registry.registered('orders').length === 0, 'deregistered at once')
  assert.equal(s.lameduck.state, 'draining')
  // A consumer whose cached list still names this instance: a new connection, during the window.
  const during = await request(`${s.url}/hello`, { reset: true })
  assert.equal(during.statusCode, 200, 'still accepting while consumers may route here')
  assert.equal(during.headers['x-lameduck-state'], 'draining')
  await during.body.dump()
  await until(() => closedAt > 0, 'the app\'s close callback')
  assert.equal(closeErr, undefined)
  assert.equal(s.server.listening, false)
  const report = s.lameduck.lifecycle.lastReport
  assert.equal(report?.outcome, 'offline')
  assert.ok(closedAt >= report!.windowEndedAt!, 'closed only after the window')
  await until(() => s.lameduck.state === 'stopped', 'stopped')
})

test('server.close() before the instance registered closes at once and registers nothing', async (t) => {
  const s = await startServer({ readiness: [async () => false], readinessTimeoutMs: 60_000 })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'waiting', 'waiting')
  await new Promise<void>((resolve) => s.server.close(() => resolve()))
  assert.equal(s.server.listening, false)
  assert.deepEqual(s.registry.registered('orders'), [])
  assert.notEqual(s.lameduck.state, 'serving')
})
