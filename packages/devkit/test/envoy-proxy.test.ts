// The local Envoy's data plane: proxying with keep-alive, and what /healthcheck/fail and
// each /drain_listeners mode do to connections and to the listener.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client } from 'undici'
import type { LocalEnvoy } from '../src/envoy/index.ts'
import { envoyFor, raw, waitFor } from './envoy-helpers.ts'

async function get (client: Client, path = '/x'): Promise<{ status: number, connection: string | undefined, body: string, headers: Record<string, unknown> }> {
  const res = await client.request({ method: 'GET', path })
  return { status: res.statusCode, connection: res.headers.connection as string | undefined, body: await res.body.text(), headers: res.headers }
}

function keepAlive (envoy: LocalEnvoy): Client {
  return new Client(envoy.url, { keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 })
}

const refused = (e: NodeJS.ErrnoException): boolean => e.code === 'ECONNREFUSED'

test('proxies requests and bodies over keep-alive connections on both sides', async (t) => {
  const { envoy } = await envoyFor(t)
  const client = keepAlive(envoy)
  t.after(() => client.close())
  const first = await get(client, '/hello?q=1')
  assert.equal(first.status, 200)
  assert.equal(first.body, 'app GET /hello?q=1')
  assert.equal(first.headers.server, 'envoy', 'server_header_transformation OVERWRITE')
  assert.equal(first.headers['x-app'], 'yes')
  assert.match(String(first.headers['x-envoy-upstream-service-time']), /^\d+$/)
  const seen = JSON.parse(String(first.headers['x-seen-headers'])) as Record<string, string>
  assert.match(seen['x-request-id']!, /^[0-9a-f-]{36}$/)
  assert.equal(seen['x-forwarded-proto'], 'http')
  assert.equal(seen.host, `127.0.0.1:${envoy.port}`, 'the downstream authority is kept')
  assert.equal(seen['x-envoy-expected-rq-timeout-ms'], '15000')
  const posted = await client.request({ method: 'POST', path: '/echo', body: 'x'.repeat(100_000) })
  assert.equal((await posted.body.text()).length, 100_000)
  assert.equal((await get(client, '/status/404')).status, 404)
  assert.equal(envoy.connections, 1, 'one downstream connection for all three requests')
  assert.equal(envoy.stat(`listener.127.0.0.1_${envoy.port}.downstream_cx_total`), 1)
  assert.equal(envoy.stat('http.ingress_http.downstream_rq_total'), 3)
  assert.equal(envoy.stat('http.ingress_http.downstream_rq_4xx'), 1)
})

test('/healthcheck/fail: connection: close on every response, listener keeps accepting; /healthcheck/ok undoes it', async (t) => {
  const { envoy } = await envoyFor(t)
  const client = keepAlive(envoy)
  t.after(() => client.close())
  assert.equal((await get(client)).connection, undefined)
  await raw(`${envoy.adminUrl}/healthcheck/fail`, 'POST')
  assert.equal((await get(client)).connection, 'close')
  await waitFor('the drained connection to close', () => envoy.connections === 0)
  assert.equal(envoy.accepting, true)
  const fresh = await raw(envoy.url + '/new')
  assert.equal(fresh.status, 200, 'new connections are still accepted')
  assert.equal(fresh.headers.connection, 'close')
  assert.equal(envoy.stat('http.ingress_http.downstream_cx_drain_close'), 2)
  await raw(`${envoy.adminUrl}/healthcheck/ok`, 'POST')
  assert.equal((await get(client)).connection, undefined)
})

test('a MODIFY_ONLY listener ignores /healthcheck/fail', async (t) => {
  const { envoy } = await envoyFor(t, { drainType: 'modify_only' })
  await raw(`${envoy.adminUrl}/healthcheck/fail`, 'POST')
  assert.equal((await raw(`${envoy.adminUrl}/ready`)).body, 'DRAINING\n')
  assert.equal((await raw(envoy.url + '/x')).headers.connection, undefined)
})

test('graceful drain: connection: close at once (immediate), accepting for the drain time, then the listener stops', async (t) => {
  const { envoy, app } = await envoyFor(t, { drainTimeMs: 400 })
  const client = keepAlive(envoy)
  const holder = keepAlive(envoy)
  t.after(async () => { await client.close(); await holder.close() })
  await get(client)
  const held = get(holder, '/hold')
  await waitFor('the held request to reach the app', () => app.held === 1)
  const drainedAt = Date.now()
  await raw(`${envoy.adminUrl}/drain_listeners?inboundonly&graceful`, 'POST')
  assert.equal((await get(client)).connection, 'close')
  assert.equal((await raw(envoy.url + '/during')).status, 200, 'still accepting during the drain time')
  await waitFor('the listener to stop', () => !envoy.accepting)
  assert.ok(Date.now() - drainedAt >= 390, `stopped after ${Date.now() - drainedAt} ms, not before the drain time`)
  assert.equal(envoy.stat('listener_manager.listener_stopped'), 1)
  await assert.rejects(raw(envoy.url + '/after'), refused)
  assert.equal((await raw(`${envoy.adminUrl}/ready`)).body, 'LIVE\n', 'drain_listeners never changes /ready')
  app.release()
  const last = await held
  assert.deepEqual([last.status, last.body, last.connection], [200, 'released', 'close'], 'in-flight requests finish after the listener stopped')
})

test('skip_exit: the drain runs but the listener never stops', async (t) => {
  const stops = await envoyFor(t, { drainTimeMs: 250 })
  const stays = await envoyFor(t, { drainTimeMs: 250 })
  // skip_exit first: its drain time (same length, one process) has ended when the other's has.
  await raw(`${stays.envoy.adminUrl}/drain_listeners?graceful&skip_exit`, 'POST')
  await raw(`${stops.envoy.adminUrl}/drain_listeners?graceful`, 'POST')
  await waitFor('the graceful drain to end', () => !stops.envoy.accepting)
  assert.equal(stays.envoy.accepting, true)
  assert.equal(stays.envoy.stat('listener_manager.listener_stopped'), 0)
  const res = await raw(stays.envoy.url + '/x')
  assert.deepEqual([res.status, res.headers.connection], [200, 'close'])
})

test('non-graceful drain: stops at once; newer Envoy also drains existing connections, older did not', async (t) => {
  for (const [notifies, expected] of [[true, 'close'], [false, undefined]] as const) {
    const { envoy } = await envoyFor(t, { nonGracefulDrainNotifies: notifies })
    const client = keepAlive(envoy)
    t.after(() => client.close())
    await get(client)
    await raw(`${envoy.adminUrl}/drain_listeners`, 'POST')
    assert.equal(envoy.accepting, false)
    await assert.rejects(raw(envoy.url + '/x'), refused)
    assert.equal((await get(client)).connection, expected, `nonGracefulDrainNotifies ${notifies}`)
  }
})

test('inboundonly leaves an outbound listener alone, except on Envoy before per-direction drains', async (t) => {
  const inbound = await envoyFor(t, { drainTimeMs: 200 })
  const outbound = await envoyFor(t, { drainTimeMs: 200, trafficDirection: 'outbound' })
  const legacy = await envoyFor(t, { drainTimeMs: 200, trafficDirection: 'outbound', perDirectionDrain: false })
  // Inbound last: when it stops, the others' drain times have ended too.
  for (const { envoy } of [outbound, legacy, inbound]) await raw(`${envoy.adminUrl}/drain_listeners?inboundonly&graceful`, 'POST')
  assert.equal((await raw(outbound.envoy.url + '/x')).headers.connection, undefined)
  assert.equal((await raw(legacy.envoy.url + '/x')).headers.connection, 'close', 'envoy#35020: outbound drained too')
  await waitFor('the inbound listener to stop', () => !inbound.envoy.accepting)
  assert.equal(outbound.envoy.accepting, true)
  assert.equal(legacy.envoy.accepting, true, 'only inbound listeners are stopped, even then')
  await raw(`${outbound.envoy.adminUrl}/drain_listeners?graceful`, 'POST')
  assert.equal((await raw(outbound.envoy.url + '/x')).headers.connection, 'close', 'an all-direction drain covers it')
})

test('gradual strategy, as Envoy 1.40.0: no response drained in the first whole second, then a share growing with whole seconds', async (t) => {
  const never = await envoyFor(t, { drainStrategy: 'gradual', drainTimeMs: 60_000, random: () => 0.999 })
  const soon = await envoyFor(t, { drainStrategy: 'gradual', drainTimeMs: 60_000, random: () => 0 })
  await raw(`${never.envoy.adminUrl}/drain_listeners?graceful`, 'POST')
  await raw(`${soon.envoy.adminUrl}/drain_listeners?graceful`, 'POST')
  const started = Date.now()
  // Inside the first whole second nothing is drained, however lucky the draw (real Envoy counts whole seconds).
  const first = (await raw(soon.envoy.url + '/x')).headers.connection
  // (A machine stalled past the second cannot tell; the check after it still runs.)
  if (Date.now() < started + 1_000) assert.equal(first, undefined, 'the first second')
  else t.diagnostic('the first request came after the first second: not checked')
  await waitFor('one whole second of drain', () => Date.now() >= started + 1_050)
  assert.equal((await raw(never.envoy.url + '/x')).headers.connection, undefined, 'early in the ramp')
  assert.equal((await raw(soon.envoy.url + '/x')).headers.connection, 'close')
})

test('as Envoy 1.40.0 (the default), an idle connection outlives the drain; proactiveIdleDrain (newest docs) closes it in the last third', async (t) => {
  const proactive = await envoyFor(t, { drainTimeMs: 300, proactiveIdleDrain: true })
  const real = await envoyFor(t, { drainTimeMs: 300 })
  assert.equal(real.envoy.options.proactiveIdleDrain, false)
  const clients = [keepAlive(proactive.envoy), keepAlive(real.envoy)]
  t.after(async () => { for (const c of clients) await c.close() })
  for (const c of clients) await get(c)
  const started = Date.now()
  await raw(`${proactive.envoy.adminUrl}/drain_listeners?graceful`, 'POST')
  await raw(`${real.envoy.adminUrl}/drain_listeners?graceful`, 'POST')
  await waitFor('the idle connection to be closed', () => proactive.envoy.connections === 0)
  assert.ok(Date.now() - started >= 190, 'not before two thirds of the drain time')
  await waitFor('the listener to stop', () => !real.envoy.accepting)
  assert.equal(real.envoy.connections, 1, 'an idle connection outlives the drain, as on real Envoy')
})

test('upstream failures become Envoy\'s local replies', async (t) => {
  const { envoy, app } = await envoyFor(t, { upstreamTimeoutMs: 150 })
  const timeout = await raw(envoy.url + '/hold')
  assert.deepEqual([timeout.status, timeout.body], [504, 'upstream request timeout'])
  await app.close()
  const down = await raw(envoy.url + '/x')
  assert.equal(down.status, 503)
  assert.equal(down.body, 'upstream connect error or disconnect/reset before headers. retried and the latest reset reason: remote connection failure')
  assert.equal(down.headers.server, 'envoy')
})

test('/quitquitquit drops every connection at once', async (t) => {
  const { envoy } = await envoyFor(t)
  const client = keepAlive(envoy)
  t.after(() => client.close())
  await get(client)
  assert.equal(envoy.connections, 1)
  await raw(`${envoy.adminUrl}/quitquitquit`, 'POST')
  await envoy.closed
  assert.equal(envoy.connections, 0)
  await assert.rejects(get(client))
})
