// Property tests of @lameduck/envoy's stats parsers and connection counting:
// total on any input (never a throw, values always in range), and exact on
// generated Envoy bodies in each format, with and without noise lines.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { countContour, countIstio, countJson, parsePrometheus, parseStatsJson, parseStatsText, type ConnectionCount } from '@lameduck/envoy'
import { forAll, json, seedFromEnv, type Random } from './prng.ts'

interface Stat { name: string, value: number, istio: boolean, prefix?: string, contour?: boolean }

const PORTS = [15006, 15001, 8080, 15021, 15090, 9901]
const CONTOUR_EXCLUDED = new Set(['admin', 'envoy-admin', 'stats', 'health', 'stats-health'])

/** A set of Envoy stats as a sidecar would have them, each marked with whether Istio's or Contour's rules count it. */
function statSet (r: Random): Stat[] {
  const stats: Stat[] = []
  const used = new Set<string>()
  const add = (s: Stat): void => { if (!used.has(s.name)) { used.add(s.name); stats.push(s) } }
  for (let i = r.int(0, 6); i > 0; i--) {
    const port = r.pick(PORTS)
    const address = r.pick(['0.0.0.0', '10.1.2.3', '[__1]'])
    const value = r.int(0, 5_000)
    const listener = `listener.${address}_${port}`
    const excludedPort = address === '0.0.0.0' && (port === 15021 || port === 15090)
    add({ name: `${listener}.downstream_cx_active`, value, istio: !excludedPort })
    if (r.bool(0.3)) add({ name: `${listener}.worker_${r.int(0, 3)}.downstream_cx_active`, value: r.int(0, 100), istio: false })
  }
  if (r.bool(0.3)) add({ name: 'listener.admin.downstream_cx_active', value: r.int(0, 5), istio: false })
  if (r.bool(0.3)) add({ name: 'listener.admin.main_thread.downstream_cx_active', value: r.int(0, 5), istio: false })
  if (r.bool(0.3)) add({ name: `listener.envoy_internal_${r.int(1, 9)}.downstream_cx_active`, value: r.int(0, 50), istio: false })
  for (let i = r.int(0, 4); i > 0; i--) {
    const prefix = r.pick(['inbound_0.0.0.0_8080', 'ingress_http', 'admin', 'stats', 'health', 'envoy-admin', 'outbound_http', `hcm_${r.int(0, 99)}`])
    add({ name: `http.${prefix}.downstream_cx_active`, value: r.int(0, 500), istio: false, prefix, contour: !CONTOUR_EXCLUDED.has(prefix) })
  }
  for (let i = r.int(0, 4); i > 0; i--) add({ name: `cluster.${r.pick(['inbound', 'outbound'])}|${r.int(1, 9000)}||svc.${r.pick(['upstream_cx_total', 'upstream_rq_200'])}`, value: r.int(0, 1e9), istio: false })
  if (r.bool(0.5)) add({ name: 'server.state', value: r.int(0, 3), istio: false })
  return r.bool(0.5) ? stats : stats.reverse()
}

const sum = (stats: Stat[], key: 'istio' | 'contour'): number => stats.reduce((n, s) => n + (s[key] === true ? s.value : 0), 0)
const hasListener = (stats: Stat[]): boolean => stats.some((s) => /^listener\..+\.downstream_cx_active$/.test(s.name))

function renderText (r: Random, stats: Stat[], noise: boolean): string {
  const lines = stats.map((s) => `${s.name}: ${s.value}${r.bool(0.1) ? ' ' : ''}`)
  if (noise) {
    lines.splice(r.int(0, lines.length), 0, 'server.version_text: "1.31.2/Clean/RELEASE"')
    lines.splice(r.int(0, lines.length), 0, 'cluster.x.upstream_rq_time: P0(nan,0) P25(nan,1.025) P50(nan,2.05) P100(nan,11)')
    lines.splice(r.int(0, lines.length), 0, '')
    lines.splice(r.int(0, lines.length), 0, 'no colon on this line')
  }
  return lines.join('\n') + (r.bool() ? '\n' : '')
}

function renderJson (r: Random, stats: Stat[], noise: boolean): string {
  const entries: unknown[] = stats.map((s) => ({ name: s.name, value: s.value }))
  if (noise) {
    entries.push({ name: 'server.version_text', value: '1.31.2' })
    entries.push({ histograms: { supported_quantiles: [0, 25, 50], computed_quantiles: [] } })
  }
  return JSON.stringify({ stats: entries }, null, r.bool() ? 2 : undefined)
}

function renderPrometheus (r: Random, stats: Stat[], noise: boolean): string {
  const lines: string[] = []
  const http = stats.filter((s) => s.prefix !== undefined)
  if (http.length > 0 || r.bool(0.3)) {
    lines.push('# TYPE envoy_http_downstream_cx_active gauge')
    for (const s of http) lines.push(`envoy_http_downstream_cx_active{envoy_http_conn_manager_prefix="${s.prefix}"} ${s.value}`)
    if (r.bool()) lines.push('')
  }
  if (noise) {
    lines.push('# HELP envoy_server_live help text', '# TYPE envoy_server_live gauge', 'envoy_server_live{} 1')
    lines.push('# TYPE envoy_cluster_upstream_rq histogram', 'envoy_cluster_upstream_rq_bucket{envoy_cluster_name="x",le="+Inf"} 3')
  }
  return lines.join('\n') + '\n'
}

function assertCount (c: ConnectionCount): void {
  assert.equal(typeof c.count, 'number')
  assert.ok(c.count === -1 || (Number.isFinite(c.count) && c.count >= 0), `count ${c.count} is -1 or a non-negative number`)
  if (c.count === -1) assert.equal(typeof c.reason, 'string', 'a -1 says why')
}

/** Deletes, duplicates, inserts and truncates: what a half-read or corrupted body looks like. */
function corrupt (r: Random, text: string): string {
  let out = text
  for (let i = r.int(1, 6); i > 0; i--) {
    const at = r.int(0, out.length)
    switch (r.int(0, 4)) {
      case 0: out = out.slice(0, at) + out.slice(at + r.int(1, 12)); break
      case 1: out = out.slice(0, at) + r.nasty(8) + out.slice(at); break
      case 2: out = out.slice(0, at); break
      case 3: out = out.slice(0, at) + r.pick(['-', '1e999', 'NaN', ':', '\n', '{', '"', '}', ' -3', '99999999999999999999']) + out.slice(at); break
      default: out = out + out.slice(0, at)
    }
  }
  return out
}

function anyInput (r: Random): unknown {
  return r.pick([
    () => r.value(3),
    () => r.nasty(400),
    () => r.string(0, 2_000),
    () => json(r.value(4)),
    () => corrupt(r, renderText(r, statSet(r), true)),
    () => corrupt(r, renderJson(r, statSet(r), true)),
    () => corrupt(r, renderPrometheus(r, statSet(r), true)),
    () => '['.repeat(r.int(1, 20_000)),
    () => `a{${'b="c",'.repeat(r.int(1, 2_000))}} 1`
  ])()
}

const seed = seedFromEnv(20_251_124)

test('the parsers and counters are total: any input, no throw, values in range', () => {
  forAll('envoy parsers on any input', seed, 4_000, anyInput, (input) => {
    const text = parseStatsText(input)
    assert.ok(Array.isArray(text))
    for (const s of text) {
      assert.match(s.name, /^[^\s:]+$/)
      assert.ok(s.value === null || (Number.isSafeInteger(s.value) && s.value >= 0), `text value ${s.value}`)
    }
    const json = parseStatsJson(input)
    assert.ok(json === null || Array.isArray(json))
    for (const s of json ?? []) {
      assert.equal(typeof s.name, 'string')
      assert.ok(s.value === null || (Number.isFinite(s.value) && s.value >= 0), `json value ${s.value}`)
    }
    const prom = parsePrometheus(input)
    assert.ok(prom.types instanceof Map && Array.isArray(prom.samples) && Array.isArray(prom.malformed))
    for (const s of prom.samples) {
      assert.match(s.name, /^[a-zA-Z_:][a-zA-Z0-9_:]*$/)
      assert.equal(typeof s.value, 'number')
      for (const v of Object.values(s.labels)) assert.equal(typeof v, 'string')
    }
    assertCount(countIstio(input))
    assertCount(countJson(input))
    assertCount(countContour(input))
  })
})

test('text stats: parsed exactly, and countIstio sums the listeners Istio counts', () => {
  forAll('envoy text stats', seed + 1, 3_000, (r) => ({ stats: statSet(r), noise: r.bool(), r }), ({ stats, noise, r }) => {
    const body = renderText(r, stats, noise)
    const parsed = parseStatsText(body).filter((s) => s.value !== null)
    assert.deepEqual(parsed, stats.map((s) => ({ name: s.name, value: s.value })))
    const c = countIstio(body)
    if (!hasListener(stats)) assert.equal(c.count, -1, 'no listener stat is "unavailable", never 0')
    else assert.equal(c.count, sum(stats, 'istio'))
  })
})

test('JSON stats: parsed exactly, and countJson agrees with countIstio on the same stats', () => {
  forAll('envoy json stats', seed + 2, 3_000, (r) => ({ stats: statSet(r), noise: r.bool(), r }), ({ stats, noise, r }) => {
    const body = renderJson(r, stats, noise)
    const parsed = parseStatsJson(body)!.filter((s) => s.value !== null)
    assert.deepEqual(parsed, stats.map((s) => ({ name: s.name, value: s.value })))
    assert.equal(countJson(body).count, countIstio(renderText(r, stats, false)).count)
  })
})

test('Prometheus stats: countContour sums the HCMs Contour counts', () => {
  forAll('envoy prometheus stats', seed + 3, 3_000, (r) => ({ stats: statSet(r), noise: r.bool(), r }), ({ stats, noise, r }) => {
    const body = renderPrometheus(r, stats, noise)
    const scrape = parsePrometheus(body)
    assert.deepEqual(scrape.malformed, [])
    const c = countContour(body)
    const declared = body.includes('# TYPE envoy_http_downstream_cx_active')
    if (!declared) assert.equal(c.count, -1)
    else assert.equal(c.count, sum(stats, 'contour'))
  })
})
