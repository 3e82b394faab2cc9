import assert from 'node:assert/strict'
import { test } from 'node:test'
import { countContour, countIstio, countJson, parsePrometheus, parseReadyBody, parseStatsJson, parseStatsText } from '../src/index.ts'
import { fixture, fixtureJson } from './fixtures.ts'

test('text: counters, gauges, readouts and histograms from Envoy\'s handler test', () => {
  const stats = parseStatsText(fixture('envoy_stats_text_handler_test.txt'))
  assert.deepEqual(stats, [
    { name: 't', value: null },
    { name: 'c1', value: 10 },
    { name: 'c2', value: 20 },
    { name: 'h1', value: null },
    { name: 'h2', value: null }
  ])
})

test('text: Istio readiness samples', () => {
  const live = Object.fromEntries(parseStatsText(fixture('istio_readiness_stats_live.txt')).map((s) => [s.name, s.value]))
  assert.deepEqual(live, { 'cluster_manager.cds.update_success': 1, 'listener_manager.lds.update_success': 1, 'server.state': 0, 'listener_manager.workers_started': 1 })
  const init = Object.fromEntries(parseStatsText(fixture('istio_readiness_stats_initializing.txt')).map((s) => [s.name, s.value]))
  assert.equal(init['server.state'], 2)
})

test('json: Envoy\'s samples', () => {
  const samples = fixtureJson<Record<string, unknown>>('envoy_stats_json_samples.json')
  assert.deepEqual(parseStatsJson(JSON.stringify(samples['GET /stats?format=json&filter=^server\\.version$'])), [{ name: 'server.version', value: 0 }])
  assert.deepEqual(parseStatsJson('{"stats":[]}'), [])
  const full = parseStatsJson(JSON.stringify(samples['GET /stats?format=json (text readout t, counters c1/c2, one histogram h)']))
  assert.deepEqual(full, [{ name: 't', value: null }, { name: 'c1', value: 10 }, { name: 'c2', value: 20 }])
})

test('prometheus: labels, order, escapes, untagged and special values', () => {
  const scrape = parsePrometheus(fixture('envoy_prometheus_admin_integration_snippets.txt'))
  assert.equal(scrape.types.get('envoy_http_downstream_rq_xx'), 'counter')
  assert.deepEqual(Object.entries(scrape.samples[0]!.labels), [['envoy_response_code_class', '4'], ['envoy_http_conn_manager_prefix', 'admin']])
  const odd = parsePrometheus([
    'a{} 1',
    'b 2 1700000000000',
    'c{x="q\\"uote\\\\slash\\nline",y="z"} 3.5e1',
    'd{x="1"} NaN',
    'e{x="1"} +Inf',
    '# HELP f whatever',
    'f{x="1",} 4',
    'g{x=1} 5',
    'h{x="1"} five',
    '{x="1"} 6'
  ].join('\n'))
  assert.deepEqual(odd.samples.map((s) => [s.name, s.value]), [['a', 1], ['b', 2], ['c', 35], ['d', NaN], ['e', Infinity], ['f', 4]])
  assert.deepEqual({ ...odd.samples[2]!.labels }, { x: 'q"uote\\slash\nline', y: 'z' })
  assert.deepEqual(odd.malformed, ['g', 'h', ''])
})

test('ready body: the four states and nothing else', () => {
  const cases = fixtureJson<{ cases: Array<{ state: string, body: string }> }>('envoy_ready_responses.json').cases
  for (const c of cases) assert.equal(parseReadyBody(c.body), c.state)
  for (const bad of ['', 'live\n', 'LIVE LIVE', '<html>', undefined, 42, 'DRAINING\nLIVE']) assert.equal(parseReadyBody(bad), null)
})

test('hostile input never throws and never yields a bogus count', () => {
  const alphabet = ['listener.', 'http.', 'admin', '0.0.0.0_15006', '.downstream_cx_active', ': ', ':', ' ', '\n', '\r\n', '7', '-1', '1e3',
    '99999999999999999999', '{', '}', '"', '\\', '=', ',', 'envoy_http_downstream_cx_active', 'envoy_http_conn_manager_prefix', '# TYPE ', 'gauge',
    '[', ']', '{"stats":', '{"name":', '"value":', 'null', 'NaN', '\u0000', '\uFFFD', 'é', '\t']
  let seed = 42
  const random = (): number => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31 }
  const valid = (n: number): boolean => n === -1 || (Number.isFinite(n) && n >= 0)
  for (let i = 0; i < 3000; i++) {
    let body = ''
    const parts = Math.floor(random() * 40)
    for (let j = 0; j < parts; j++) body += alphabet[Math.floor(random() * alphabet.length)]
    for (const count of [countIstio, countJson, countContour]) {
      const { count: n } = count(body)
      assert.ok(valid(n), `${count.name}(${JSON.stringify(body)}) = ${n}`)
    }
  }
  for (const junk of [undefined, null, 42, {}, [], Buffer.from('x'), Symbol('s')]) {
    assert.equal(countIstio(junk).count, -1)
    assert.equal(countJson(junk).count, -1)
    assert.equal(countContour(junk).count, -1)
    assert.equal(parseReadyBody(junk), null)
  }
  assert.equal(countJson('{"stats":{"name":"x"}}').count, -1)
  assert.equal(countJson('[1,2,3]').count, -1)
  assert.equal(countJson('{"stats":[null,1,"x",{"name":5}]}').count, -1)
  assert.equal(countIstio('listener.a_1.downstream_cx_active: 99999999999999999999\n').count, -1, 'absurd values are not counts')
})
