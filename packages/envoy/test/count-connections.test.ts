import assert from 'node:assert/strict'
import { test } from 'node:test'
import { countConnections, countContour, countIstio, countJson, isCountedListenerStat, ISTIO_INBOUND_LISTENERS } from '../src/index.ts'
import { constructedSections, DOCUMENTED_COUNTS, fixture } from './fixtures.ts'

for (const { file, method, expected, excludePorts } of DOCUMENTED_COUNTS) {
  test(`${method} count of ${file ?? 'an empty body'} is ${expected}`, () => {
    const body = file === null ? '' : fixture(file)
    assert.equal(countConnections(method, body, { excludePorts }).count, expected)
  })
}

test('contour: a missing stat gives -1 with Contour\'s error text', () => {
  const result = countContour(fixture('contour_prometheus_missing_stat.txt'))
  assert.deepEqual(result, { count: -1, reason: 'error finding Prometheus stat "envoy_http_downstream_cx_active" in the request result' })
})

test('istio: the excluded ports decide what counts', () => {
  // With Istio's production ports, 15009 is an ordinary listener and counts.
  assert.equal(countIstio(fixture('istio_stats_downstream_cx_active_ambient_only.txt')).count, 1)
  assert.equal(countIstio(fixture('istio_stats_downstream_cx_active_zero.txt'), { excludePorts: [] }).count, 1)
  assert.equal(countIstio(fixture('istio_stats_downstream_cx_active_positive.txt')).count, 19)
})

test('istio: per-worker, admin, internal and http.* stats never count', () => {
  const counted = (name: string): boolean => isCountedListenerStat(name)
  assert.equal(counted('listener.0.0.0.0_15006.downstream_cx_active'), true)
  assert.equal(counted('listener.10.1.2.3_9043.downstream_cx_active'), true)
  assert.equal(counted('listener.0.0.0.0_15006.worker_3.downstream_cx_active'), false)
  assert.equal(counted('listener.admin.downstream_cx_active'), false)
  assert.equal(counted('listener.admin.main_thread.downstream_cx_active'), false)
  assert.equal(counted('listener.envoy_internal_main_internal.downstream_cx_active'), false)
  assert.equal(counted('listener.0.0.0.0_15021.downstream_cx_active'), false)
  assert.equal(counted('listener.0.0.0.0_15090.downstream_cx_active'), false)
  assert.equal(counted('http.inbound_0.0.0.0_8080.downstream_cx_active'), false)
  assert.equal(counted('listener.0.0.0.0_15006.downstream_cx_active_other'), false)
})

test('include narrows the count to matching stats', () => {
  const body = fixture('istio_stats_downstream_cx_active_positive.txt')
  assert.equal(countIstio(body, { include: /^listener\.0\.0\.0\.0_/ }).count, 14)
  assert.equal(countContour(fixture('contour_prometheus_valid_both.txt'), { include: /^ingress_https$/ }).count, 4)
})

test('the constructed state sums to 3 in all three formats', () => {
  const { text, json, prometheus } = constructedSections()
  assert.equal(countIstio(text).count, 3)
  assert.equal(countJson(json).count, 3)
  assert.equal(countContour(prometheus).count, 3)
})

test('unavailable is -1, not 0', () => {
  assert.equal(countIstio('').count, -1)
  assert.equal(countIstio('   \n').count, -1)
  assert.equal(countIstio('http.admin.downstream_cx_active: 2\n').count, -1, 'no listener stat at all: the stats matcher dropped it')
  assert.equal(countIstio('listener.0.0.0.0_15006.downstream_cx_active: lots\n').count, -1)
  assert.equal(countJson('{"stats":[]}').count, -1)
  assert.equal(countJson('{"stats":[{"name":"listener.x_1.downstream_cx_active","value":"7"}]}').count, -1)
  assert.equal(countJson('{"stats":[{"name":"listener.admin.downstream_cx_active","value":1}]}').count, 0)
  assert.equal(countContour('# TYPE envoy_http_downstream_cx_active gauge\n').count, 0, 'family declared, no HCM: zero')
  assert.equal(countContour('envoy_http_downstream_cx_active{envoy_http_conn_manager_prefix="x"} NaN\n').count, -1)
  assert.equal(countContour('envoy_http_downstream_cx_active{envoy_http_conn_manager_prefix="x} 3\n').count, -1)
})

test('inboundListeners: when Istio\'s inbound listener is in the stats, only it counts; otherwise every listener', () => {
  const body = fixture('istio_stats_downstream_cx_active_positive.txt')
  assert.equal(countIstio(body, { inboundListeners: ISTIO_INBOUND_LISTENERS }).count, 0, '15006 has 0, the outbound 19 do not count')
  const busy = 'listener.0.0.0.0_15006.downstream_cx_active: 3\nlistener.0.0.0.0_15001.downstream_cx_active: 1\nlistener.10.96.0.1_8761.downstream_cx_active: 2\n'
  assert.equal(countIstio(busy, { inboundListeners: ISTIO_INBOUND_LISTENERS }).count, 3)
  assert.equal(countIstio(busy).count, 6, 'Istio\'s own rule sums them all')
  const plain = 'listener.127.0.0.1_8080.downstream_cx_active: 2\n'
  assert.equal(countIstio(plain, { inboundListeners: ISTIO_INBOUND_LISTENERS }).count, 2, 'no Istio inbound listener: every listener counts')
  assert.equal(countJson(JSON.stringify({ stats: [{ name: 'listener.[__]_15006.downstream_cx_active', value: 1 }, { name: 'listener.[__]_15001.downstream_cx_active', value: 4 }] }), { inboundListeners: ISTIO_INBOUND_LISTENERS }).count, 1)
})
