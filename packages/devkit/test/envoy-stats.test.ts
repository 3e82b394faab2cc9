// The local Envoy's stats: rendering byte for byte against the constructed fixture, and
// downstream_cx_active gauges that follow real connections.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { envoyAdmin } from '@lameduck/envoy'
import { Client } from 'undici'
import { parseQuery, renderStats } from '../src/envoy/stats-render.ts'
import { adminStats, listenerStats, StatStore } from '../src/envoy/stats-store.ts'
import { constructedSections, envoyFor, openConnections, raw, waitFor } from './envoy-helpers.ts'

const FILTER = 'usedonly&filter=downstream_cx_active$'

test('renders the constructed fixture state byte for byte in text, JSON and Prometheus', () => {
  // One HCM ingress_http on 0.0.0.0:8080, concurrency 2, connections 2 + 1, one admin connection.
  const store = new StatStore()
  const l = listenerStats(store, '0.0.0.0_8080', 'ingress_http', 2)
  const a = adminStats(store)
  l.cxActive.set(3); l.httpCxActive.set(3); l.workerCxActive[0]!.set(2); l.workerCxActive[1]!.set(1)
  a.cxActive.set(1); a.mainThreadCxActive.set(1); a.httpCxActive.set(1)
  store.gauge('server.live').set(1)
  const expected = constructedSections()
  assert.equal(renderStats(store, parseQuery(FILTER)).body, expected.text)
  assert.equal(renderStats(store, parseQuery(`${FILTER}&format=json`)).body, expected.json)
  assert.equal(renderStats(store, parseQuery(FILTER), { prometheus: true }).body, expected.prometheus)
  assert.equal(renderStats(store, parseQuery(`${FILTER}&format=prometheus`)).body, expected.prometheus)
  // Older Envoy: no blank line between families.
  assert.equal(renderStats(store, parseQuery(FILTER), { prometheus: true, blankLineBetweenFamilies: false }).body, expected.prometheus.replaceAll('\n\n', '\n'))
})

test('a live Envoy in the fixture\'s state prints the fixture (modulo its address)', async (t) => {
  // The fixture is the newer source's rendering, a blank line after each Prometheus family (1.40.0 prints none).
  const { envoy } = await envoyFor(t, { concurrency: 2, promBlankLineBetweenFamilies: true })
  const conns = await openConnections(envoy.url, 3)
  t.after(() => conns.close())
  const admin = new Client(envoy.adminUrl, { pipelining: 1 }) // exactly one admin connection
  t.after(() => admin.close())
  const get = async (path: string): Promise<string> => (await admin.request({ method: 'GET', path })).body.text()
  const expected = constructedSections()
  const here = (s: string): string => s.replaceAll('0.0.0.0_8080', `127.0.0.1_${envoy.port}`)
  assert.equal(await get(`/stats?${FILTER}`), here(expected.text))
  assert.equal(await get(`/stats?${FILTER}&format=json`), here(expected.json))
  assert.equal(await get(`/stats/prometheus?${FILTER}`), here(expected.prometheus))
})

test('downstream_cx_active gauges follow N keep-alive connections opened and closed through the listener', async (t) => {
  const { envoy } = await envoyFor(t)
  const admin = envoyAdmin({ url: envoy.adminUrl })
  t.after(() => admin.close())
  const counts = async (): Promise<number[]> => [
    envoy.stat(`listener.127.0.0.1_${envoy.port}.downstream_cx_active`)!,
    envoy.stat('http.ingress_http.downstream_cx_active')!,
    await admin.activeConnections({ method: 'istio' }),
    await admin.activeConnections({ method: 'contour' }),
    await admin.activeConnections({ method: 'json' })
  ]
  // The listener gauge is unused, so usedonly hides it, but the admin listener's (our own poll) is there: 0.
  assert.deepEqual(await counts(), [0, 0, 0, 0, 0])

  const first = await openConnections(envoy.url, 5)
  assert.deepEqual(await counts(), [5, 5, 5, 5, 5])
  const second = await openConnections(envoy.url, 2)
  assert.deepEqual(await counts(), [7, 7, 7, 7, 7])
  await first.close()
  await waitFor('5 connections to close', async () => (await counts()).every((n) => n === 2))
  await second.close()
  await waitFor('all connections to close', async () => (await counts()).every((n) => n === 0))
  // Used once, so still printed: 0, not "unavailable".
  assert.equal((await raw(`${envoy.adminUrl}/stats?${FILTER}`)).body.includes(`listener.127.0.0.1_${envoy.port}.downstream_cx_active: 0\n`), true)
  assert.equal(envoy.stat(`listener.127.0.0.1_${envoy.port}.downstream_cx_total`), 7)
})

test('connections wait unaccepted until initialization, then count', async (t) => {
  const { envoy } = await envoyFor(t, { initializeDelayMs: 60_000 })
  const client = new Client(envoy.url)
  t.after(() => client.close())
  let answered = false
  const pending = client.request({ method: 'GET', path: '/early' }).then(async (res) => { answered = true; return res.body.text() })
  await waitFor('the connect to reach the listener', () => envoy.stat('listener_manager.workers_started') === 0)
  assert.equal(envoy.connections, 0)
  assert.equal(answered, false)
  assert.equal((await raw(`${envoy.adminUrl}/stats?usedonly&filter=^listener_manager\\.workers_started$`)).body, '', 'workers not started: unused')
  envoy.initialize()
  assert.equal(await pending, 'app GET /early')
  assert.equal(envoy.connections, 1)
  assert.equal(envoy.stat('listener_manager.workers_started'), 1)
})

test('server.live changes at once; server.state and server.total_connections wait for the stats flush', async (t) => {
  const slow = await envoyFor(t, { statsFlushIntervalMs: 60_000 })
  const conns = await openConnections(slow.envoy.url, 1)
  t.after(() => conns.close())
  await raw(`${slow.envoy.adminUrl}/healthcheck/fail`, 'POST')
  const read = async (url: string): Promise<string> => (await raw(`${url}/stats?filter=^server\\.(live|state|total_connections)$`)).body
  assert.equal(await read(slow.envoy.adminUrl), 'server.live: 0\nserver.state: 0\nserver.total_connections: 0\n')

  const fast = await envoyFor(t, { statsFlushIntervalMs: 20 })
  const conns2 = await openConnections(fast.envoy.url, 2)
  t.after(() => conns2.close())
  await raw(`${fast.envoy.adminUrl}/healthcheck/fail`, 'POST')
  await waitFor('a flush', async () => await read(fast.envoy.adminUrl) === 'server.live: 0\nserver.state: 1\nserver.total_connections: 2\n')
})

test('Istio\'s readiness queries see a live Envoy', async (t) => {
  const { envoy } = await envoyFor(t)
  const body = (await raw(`${envoy.adminUrl}/stats?usedonly&filter=^(server\\.state|listener_manager\\.workers_started)`)).body
  assert.equal(body, 'listener_manager.workers_started: 1\nserver.state: 0\n')
  const xds = (await raw(`${envoy.adminUrl}/stats?usedonly&filter=^(cluster_manager\\.cds|listener_manager\\.lds)\\.(update_success|update_rejected)$`)).body
  assert.equal(xds, 'cluster_manager.cds.update_success: 1\nlistener_manager.lds.update_success: 1\n')
})
