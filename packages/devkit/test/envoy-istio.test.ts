// The local Envoy as an Istio sidecar: the stats matcher of Istio's bootstrap (no
// downstream_cx_active without EXIT_ON_ZERO_ACTIVE_CONNECTIONS), an outbound listener
// whose connections Istio's count includes, and pilot-agent's terminate() timing.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Client } from 'undici'
import { istioActiveConnections, terminateLikeIstio, type LocalEnvoy } from '../src/envoy/index.ts'
import { envoyFor, fixture, raw, startApp, waitFor } from './envoy-helpers.ts'

const ISTIO_QUERY = '/stats?usedonly&filter=downstream_cx_active$'

function keepAlive (url: string): Client {
  return new Client(url, { keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 })
}

async function getOn (client: Client, path = '/x'): Promise<{ status: number, connection: unknown }> {
  const res = await client.request({ method: 'GET', path })
  await res.body.text()
  return { status: res.statusCode, connection: res.headers.connection }
}

async function istioCount (envoy: LocalEnvoy): Promise<number> {
  return istioActiveConnections((await raw(envoy.adminUrl + ISTIO_QUERY)).body)
}

test('Istio\'s counting rule on its own test data: 19, 0, 0 and -1 for an empty body', () => {
  assert.equal(istioActiveConnections(fixture('istio_stats_downstream_cx_active_positive.txt'), [15021, 15009]), 19)
  assert.equal(istioActiveConnections(fixture('istio_stats_downstream_cx_active_zero.txt'), [15021, 15009]), 0)
  assert.equal(istioActiveConnections(fixture('istio_stats_downstream_cx_active_ambient_only.txt'), [15021, 15009]), 0)
  assert.equal(istioActiveConnections(''), -1)
})

test('Istio without EXIT_ON_ZERO_ACTIVE_CONNECTIONS: no downstream_cx_active at all, so the count is -1', async (t) => {
  const { envoy } = await envoyFor(t, { istio: { exitOnZeroActiveConnections: false } })
  const client = keepAlive(envoy.url)
  t.after(() => client.close())
  assert.equal((await getOn(client)).status, 200)
  const body = (await raw(envoy.adminUrl + ISTIO_QUERY)).body
  assert.equal(body, '', 'the stats matcher dropped every downstream_cx_active')
  assert.equal(istioActiveConnections(body), -1)
  const all = (await raw(envoy.adminUrl + '/stats')).body
  assert.match(all, /^server\.live: 1$/m, 'server.* is in the inclusion list')
  assert.match(all, /^listener_manager\.workers_started: 1$/m)
  assert.doesNotMatch(all, /^http\./m, 'http.* stats are not')
})

test('Istio with EXIT_ON_ZERO_ACTIVE_CONNECTIONS: inbound 15006 and outbound 15001 both count', async (t) => {
  const registry = await startApp()
  t.after(() => registry.close())
  const { envoy } = await envoyFor(t, { istio: { exitOnZeroActiveConnections: true }, outbound: registry.url })
  const inbound = keepAlive(envoy.url)
  const outbound = keepAlive(envoy.outboundUrl!)
  t.after(async () => { await inbound.close(); await outbound.close() })
  await getOn(inbound)
  assert.equal((await getOn(outbound, '/eureka/apps/')).status, 200, 'the outbound listener forwards to its target')
  const body = (await raw(envoy.adminUrl + ISTIO_QUERY)).body
  assert.match(body, /^listener\.0\.0\.0\.0_15006\.downstream_cx_active: 1$/m)
  assert.match(body, /^listener\.0\.0\.0\.0_15001\.downstream_cx_active: 1$/m)
  assert.equal(istioActiveConnections(body), 2)
  const listeners = (await raw(envoy.adminUrl + '/listeners')).body
  assert.match(listeners, /^virtualInbound::127\.0\.0\.1:\d+$/m)
  assert.match(listeners, /^virtualOutbound::127\.0\.0\.1:\d+$/m)
})

test('an inbound-only drain leaves the outbound listener serving with keep-alive, and it never stops', async (t) => {
  const registry = await startApp()
  t.after(() => registry.close())
  const { envoy } = await envoyFor(t, { outbound: registry.url, drainTimeMs: 100 })
  const inbound = keepAlive(envoy.url)
  const outbound = keepAlive(envoy.outboundUrl!)
  t.after(async () => { await inbound.close(); await outbound.close() })
  await raw(`${envoy.adminUrl}/drain_listeners?inboundonly&graceful`, 'POST')
  assert.equal((await getOn(inbound)).connection, 'close')
  assert.equal((await getOn(outbound)).connection, undefined)
  await waitFor('the inbound listener to stop', () => !envoy.accepting)
  assert.equal((await raw(envoy.outboundUrl + '/later')).status, 200, 'outbound still accepts')
  await waitFor('the one-off connection to go', () => envoy.outboundConnections === 1)
})

test('pilot-agent default: drain inbound, kill Envoy at terminationDrainDuration, long before the drain time ends', async (t) => {
  const { envoy } = await envoyFor(t, { istio: { exitOnZeroActiveConnections: false }, drainTimeMs: 45_000 * 0.05 })
  const client = keepAlive(envoy.url)
  t.after(() => client.close())
  await getOn(client)
  const result = await terminateLikeIstio(envoy, { terminationDrainDurationMs: 5_000 * 0.05 })
  assert.equal(result.outcome, 'termination-drain-duration')
  assert.ok(result.elapsedMs >= 250)
  assert.equal(envoy.stat('listener_manager.listener_stopped'), 0, 'killed while the inbound listener still accepted')
  await assert.rejects(getOn(client), 'the kill dropped the kept-alive connection')
})

test('pilot-agent with EXIT_ON_ZERO_ACTIVE_CONNECTIONS: the app\'s own outbound connection keeps Envoy up', async (t) => {
  const registry = await startApp()
  t.after(() => registry.close())
  const { envoy } = await envoyFor(t, { istio: { exitOnZeroActiveConnections: true }, outbound: registry.url, drainTimeMs: 45_000 * 0.05 })
  const outbound = keepAlive(envoy.outboundUrl!)
  await getOn(outbound)
  const terminating = terminateLikeIstio(envoy, { minimumDrainDurationMs: 50, checkIntervalMs: 20 })
  await waitFor('the agent to poll a few times', () => envoy.adminLog.filter((e) => e.url === ISTIO_QUERY).length >= 3)
  assert.equal(envoy.outboundConnections, 1)
  assert.equal(await istioCount(envoy), 1, 'only the outbound connection is left, and it counts')
  await outbound.close()
  const result = await terminating
  assert.equal(result.outcome, 'zero')
  assert.ok(result.readings.includes(1), `readings ${result.readings.join(', ')}`)
})

test('pilot-agent with exit-on-zero but stats not kept: -1 ends the wait at the first poll', async (t) => {
  const { envoy } = await envoyFor(t, { istio: { exitOnZeroActiveConnections: false } })
  await raw(envoy.url + '/x')
  const result = await terminateLikeIstio(envoy, { exitOnZeroActiveConnections: true, minimumDrainDurationMs: 20, checkIntervalMs: 20 })
  assert.deepEqual([result.outcome, result.readings], ['unavailable', [-1]])
})
