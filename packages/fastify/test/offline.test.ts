import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Client, request } from 'undici'
import { startApp, until } from './helpers.ts'

test('/offline deregisters at once, keeps serving with drain headers, closes keep-alive, drains in-flight, then offline', async (t) => {
  const { app, registry, url, admin } = await startApp({ windows: { clientFetchMs: 1_500 }, maxRequestMs: 5_000 })
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')

  // A keep-alive client with an idle connection, and a slow request in flight.
  const client = new Client(url, { keepAliveTimeout: 60_000 })
  t.after(() => client.close())
  let disconnects = 0
  client.on('disconnect', () => { disconnects++ })
  const warm = await client.request({ path: '/hello', method: 'GET' })
  assert.equal(warm.headers['x-lameduck-state'], undefined, 'no drain header while serving')
  await warm.body.dump()
  const slow = request(`${url}/slow?ms=900`)
  await until(() => app.lameduck.lifecycle.inflight.count === 1, 'the slow request to be in flight')

  const started = Date.now()
  const res = await request(`${admin}/offline`, { method: 'POST' })
  assert.equal(res.statusCode, 202)
  const body = await res.body.json() as { state: string, windowMs: number, breakdown: Array<{ part: string, ms: number }>, deadline: number }
  assert.equal(body.state, 'draining')
  assert.equal(body.windowMs, 1_500)
  assert.deepEqual(body.breakdown.map((b) => [b.part, b.ms]), [['clientFetchMs', 1_500]])
  assert.ok(body.deadline >= started + 1_500)
  // Deregistered at once: seen gone while the 1.5 s window still runs (the state is read as soon as it is gone).
  const stateWhenGone = await until(() => registry.registered('orders').length === 0 && app.lameduck.state, 'deregistration')
  assert.equal(stateWhenGone, 'draining', 'deregistered before the window ended')

  // The idle keep-alive connection goes when the Keep-Alive timeout the server advertised runs out
  // (timeout=3: undici drops it after 1 s), inside the window; the server never closes it under the client.
  await until(() => disconnects === 1, 'the idle keep-alive connection to be closed')

  // Still serving, never 503, with both headers.
  const during = await request(`${url}/hello`)
  assert.equal(during.statusCode, 200)
  assert.equal(during.headers.connection, 'close')
  assert.equal(during.headers['x-lameduck-state'], 'draining')
  await during.body.dump()
  assert.equal((await request(`${url}/health/ready`)).statusCode, 503)

  // The slow request started before /offline completes normally.
  const slowRes = await slow
  assert.equal(slowRes.statusCode, 200)
  assert.deepEqual(await slowRes.body.json(), { slept: 900 })

  await until(() => app.lameduck.state === 'offline', 'offline', 5_000)
  const elapsed = Date.now() - started
  assert.ok(elapsed >= 1_500, `offline only after the window (${elapsed} ms)`)
  const status = await (await request(`${admin}/status`)).body.json() as { state: string, lastOffline: { requestsWhileDraining: number, outcome: string } }
  assert.equal(status.state, 'offline')
  assert.equal(status.lastOffline.outcome, 'offline')
  assert.ok(status.lastOffline.requestsWhileDraining >= 2)
  // Offline but up: requests are still served, still marked.
  const after = await request(`${url}/hello`)
  assert.equal(after.statusCode, 200)
  assert.equal(after.headers['x-lameduck-state'], 'offline')
  await after.body.dump()
})

test('a request in flight when the window ends holds offline until it completes', async (t) => {
  const { app, admin, url } = await startApp({ windows: { clientFetchMs: 200 }, maxRequestMs: 5_000 })
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  const offline = request(`${admin}/offline?wait=true`)
  await until(() => app.lameduck.state === 'draining', 'draining')
  const slow = request(`${url}/slow?ms=700`) // arrives during the window, outlives it
  const res = await offline
  const body = await res.body.json() as { state: string, report: { inflightWaitMs: number, totalMs: number, inflightAtEnd: number } }
  assert.equal(res.statusCode, 200)
  assert.equal(body.state, 'offline')
  assert.equal(body.report.inflightAtEnd, 0)
  assert.ok(body.report.inflightWaitMs > 200, `waited for the slow request (${body.report.inflightWaitMs} ms)`)
  assert.equal((await slow).statusCode, 200)
})

test('repeated /offline and /offline?wait=true join the running sequence; /online from draining and offline re-registers', async (t) => {
  const { app, registry, admin } = await startApp({ windows: { clientFetchMs: 400 } })
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')

  const first = await (await request(`${admin}/offline`, { method: 'POST' })).body.json() as { startedAt: number }
  const second = await (await request(`${admin}/offline`)).body.json() as { startedAt: number, state: string }
  assert.equal(second.state, 'draining')
  assert.equal(second.startedAt, first.startedAt, 'joined: the same sequence')
  const waited = await request(`${admin}/offline?wait=true`)
  assert.equal(waited.statusCode, 200)
  const report = await waited.body.json() as { state: string, report: { startedAt: number, outcome: string } }
  assert.equal(report.state, 'offline')
  assert.equal(report.report.outcome, 'offline')

  // online from offline
  const on = await request(`${admin}/online?wait=true`, { method: 'POST' })
  assert.equal(on.statusCode, 200)
  assert.equal(app.lameduck.state, 'serving')
  assert.equal(registry.registered('orders').length, 1)

  // online from draining cancels the sequence
  await request(`${admin}/offline`)
  await until(() => registry.registered('orders').length === 0, 'deregistered')
  const back = await request(`${admin}/online?wait=true`)
  assert.equal(back.statusCode, 200)
  assert.equal(app.lameduck.state, 'serving')
  assert.equal(registry.registered('orders').length, 1)
  assert.equal(app.lameduck.lifecycle.lastReport?.outcome, 'cancelled')

  // online while closing → 409
  app.lameduck.lifecycle.beginClose('test')
  const refused = await request(`${admin}/online`)
  assert.equal(refused.statusCode, 409)
  assert.match(((await refused.body.json()) as { message: string }).message, /shutting down/)
})
