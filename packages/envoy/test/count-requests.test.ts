import { test } from 'node:test'
import assert from 'node:assert/strict'
import { countRequests, drainEnvoy, envoyAdmin } from '@lameduck/envoy'
import { fakeAdmin } from './fake-admin.ts'

const stats = (pairs: Record<string, number>): string => JSON.stringify({ stats: Object.entries(pairs).map(([name, value]) => ({ name, value })) })

test('countRequests: Istio\'s inbound HCMs when present, else every HCM but the admin\'s, Contour\'s own and outbound ones', () => {
  // As real Envoy 1.40.0 prints them for the Istio-style bootstrap of test/real.
  const istio = stats({
    'http.admin.downstream_rq_active': 1,
    'http.admin.downstream_rq_total': 9,
    'http.inbound_0.0.0.0_8080.downstream_rq_active': 2,
    'http.inbound_0.0.0.0_8080.downstream_rq_total': 40,
    'http.outbound_0.0.0.0_80.downstream_rq_active': 5,
    'http.outbound_0.0.0.0_80.downstream_rq_total': 70
  })
  assert.deepEqual(countRequests(istio), { active: 2, total: 40, prefixes: ['inbound_0.0.0.0_8080'] })
  const contour = stats({ 'http.ingress_http.downstream_rq_active': 0, 'http.ingress_http.downstream_rq_total': 3, 'http.stats.downstream_rq_active': 1, 'http.stats.downstream_rq_total': 8, 'http.outbound_http.downstream_rq_active': 4, 'http.outbound_http.downstream_rq_total': 4 })
  assert.deepEqual(countRequests(contour), { active: 0, total: 3, prefixes: ['ingress_http'] })
  assert.deepEqual(countRequests(contour, { include: /^outbound/ }), { active: 4, total: 4, prefixes: ['outbound_http'] })
})

test('countRequests: no http gauges (Istio\'s default stats matcher), garbage and half a pair are unavailable, never 0', () => {
  for (const body of ['{"stats":[]}', stats({ 'http.admin.downstream_rq_active': 0, 'http.admin.downstream_rq_total': 1 }), 'nope', '', stats({ 'http.ingress_http.downstream_rq_active': 0 })]) {
    const r = countRequests(body)
    assert.equal(r.active, -1, body)
    assert.equal(r.total, -1, body)
    assert.ok(r.reason !== undefined && r.reason.length > 0)
  }
})

test('drainEnvoy idleQuietMs: the drain strategy from /server_info says from when idle connections count as drained', async (t) => {
  for (const [info, expectIdle] of [
    [{ state: 'LIVE', command_line_options: { drain_strategy: 'Immediate', drain_time: '45s' } }, true],
    [{ state: 'LIVE', command_line_options: { drain_strategy: 'Gradual', drain_time: '600s' } }, false],
    [{ state: 'LIVE', command_line_options: { drain_strategy: 'Gradual', drain_time: '0.050s' } }, true],
    [{ state: 'LIVE' }, false]
  ] as const) {
    const server = await fakeAdmin((req) => {
      if (req.url === '/server_info') return { body: JSON.stringify(info) }
      if (req.url!.startsWith('/stats?usedonly')) return { body: 'listener.0.0.0.0_15006.downstream_cx_active: 1\n' }
      if (req.url!.startsWith('/stats?filter=^http')) return { body: stats({ 'http.inbound_0.0.0.0_8080.downstream_rq_active': 0, 'http.inbound_0.0.0.0_8080.downstream_rq_total': 7 }) }
      return { body: 'OK\n' }
    })
    const admin = envoyAdmin({ url: server.url })
    t.after(async () => { await admin.close(); await server.close() })
    const result = await drainEnvoy(admin, { strategy: 'listeners', inboundOnly: true, checkIntervalMs: 10, idleQuietMs: 20, timeoutMs: expectIdle ? 20_000 : 400 })
    assert.equal(result.outcome, expectIdle ? 'idle' : 'deadline', JSON.stringify(info))
    if (result.outcome === 'idle') assert.deepEqual([result.drained, result.count, result.activeRequests], [true, 1, 0])
  }
})

test('drainEnvoy idleQuietMs: after /healthcheck/fail at once, without /server_info; a request in flight holds it', async (t) => {
  let active = 1
  const server = await fakeAdmin((req) => {
    if (req.url!.startsWith('/stats?usedonly')) return { body: 'listener.0.0.0.0_15006.downstream_cx_active: 2\n' }
    if (req.url!.startsWith('/stats?filter=^http')) return { body: stats({ 'http.inbound_0.0.0.0_8080.downstream_rq_active': active, 'http.inbound_0.0.0.0_8080.downstream_rq_total': 7 }) }
    return { body: 'OK\n' }
  })
  const admin = envoyAdmin({ url: server.url })
  t.after(async () => { await admin.close(); await server.close() })
  const held = await drainEnvoy(admin, { strategy: 'healthcheck', checkIntervalMs: 10, idleQuietMs: 0, timeoutMs: 200 })
  assert.equal(held.outcome, 'deadline', 'a request in flight is not idle')
  active = 0
  const idle = await drainEnvoy(admin, { strategy: 'healthcheck', checkIntervalMs: 10, idleQuietMs: 0, timeoutMs: 5_000 })
  assert.equal(idle.outcome, 'idle')
  assert.ok(!server.requests.some((r) => r.url === '/server_info'))
})
