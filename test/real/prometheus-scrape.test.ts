// lameduck's Prometheus metrics against the real thing: `promtool check metrics` on the engine's
// own exposition and on prom-client's (after drains, so the offline-duration histogram has
// samples), then a real Prometheus scraping the app port, evaluating the PrometheusRule's alerts
// and every query of the Grafana dashboard on what it scraped.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { readFileSync } from 'node:fs'
import { memoryRegistry, silentLogger } from '@lameduck/core'
import { attach } from '@lameduck/node'
import { until } from '@lameduck/test-utils'
import { Registry } from 'prom-client'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { installPrometheus, promtool, startPrometheus } from './helpers/prometheus.ts'

const installed = installPrometheus()
const skip = 'skip' in installed ? installed.skip : false
const bin = 'bin' in installed ? installed.bin : ''

const monitoring = new URL('../../examples/k8s/monitoring/', import.meta.url)

/** An app serving with metrics on its own port; drain() runs two drains: one cut at maxRequestMs, one clean. */
async function app (t: import('node:test').TestContext) {
  const promRegistry = new Registry()
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/slow') === true) { setTimeout(() => res.end('slow'), 1_500); return }
    res.end('ok')
  })
  const lameduck = await attach(server, {
    service: 'orders',
    host: '127.0.0.1',
    registry: memoryRegistry(),
    windows: { clientFetchMs: 200 },
    maxRequestMs: 100,
    signals: false,
    admin: false,
    logger: silentLogger,
    metrics: { listener: 'app', registry: promRegistry }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(async () => { await lameduck.close(); server.closeAllConnections(); await new Promise((resolve) => server.close(resolve)) })
  const port = (server.address() as { port: number }).port
  await until(() => lameduck.state === 'serving', 'serving')
  const drain = async (): Promise<void> => {
    const slow = fetch(`http://127.0.0.1:${port}/slow`).then(async (r) => await r.text(), () => '')
    await until(() => lameduck.lifecycle.inflight.count === 1, 'the slow request in flight')
    assert.equal((await lameduck.offline()).inflightAtEnd, 1)
    await slow
    await lameduck.online()
    assert.equal((await lameduck.offline()).inflightAtEnd, 0)
  }
  return { port, lameduck, promRegistry, drain }
}

test('promtool check metrics: the engine\'s exposition and prom-client\'s are clean, the histogram included; a broken one is not', { skip }, async (t) => {
  const { port, promRegistry, drain } = await app(t)
  await drain()
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  assert.match(text, /^lameduck_offline_duration_seconds_count\{outcome="offline"\} 2$/m)
  const engine = await promtool(bin, ['check', 'metrics'], text)
  assert.deepEqual(engine, { code: 0, output: '' })
  const prom = await promRegistry.metrics()
  assert.match(prom, /^lameduck_offline_duration_seconds_bucket\{le="\+Inf",outcome="offline"\} 2$/m)
  assert.deepEqual(await promtool(bin, ['check', 'metrics'], prom), { code: 0, output: '' })
  // Negative control: the same text with a counter's _total suffix taken off and a HELP line lost.
  const broken = text.replace(/lameduck_requests_total/g, 'lameduck_requests').replace(/^# HELP lameduck_state .*\n/m, '')
  const bad = await promtool(bin, ['check', 'metrics'], broken)
  assert.notEqual(bad.code, 0)
  assert.match(bad.output, /lameduck_requests counter metrics should have "_total" suffix/)
  assert.match(bad.output, /lameduck_state no help text/)
})

/** The PrometheusRule's groups as a plain Prometheus rule file. */
function ruleFile (): string {
  const rule = parseYaml(readFileSync(new URL('prometheus-rule.yaml', monitoring), 'utf8')) as { spec: { groups: unknown[] } }
  return toYaml({ groups: rule.spec.groups })
}

/** The dashboard's queries with its variables filled in as Grafana would for "All". */
function dashboardQueries (): Array<{ panel: string, expr: string }> {
  const dashboard = JSON.parse(readFileSync(new URL('grafana-dashboard.json', monitoring), 'utf8')) as { panels: Array<{ title: string, targets?: Array<{ expr: string }> }> }
  return dashboard.panels.flatMap((p) => (p.targets ?? []).map((x) => ({
    panel: p.title,
    expr: x.expr.replaceAll('$namespace', '.*').replaceAll('$pod', '.*').replaceAll('$__rate_interval', '1m').replaceAll('$__interval', '15s').replaceAll('$__range', '1h')
  })))
}

test('promtool check rules: the PrometheusRule\'s groups are valid Prometheus rules', { skip }, async () => {
  const { writeFileSync, mkdtempSync, rmSync } = await import('node:fs')
  const { join } = await import('node:path')
  const { tmpdir } = await import('node:os')
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-rules-'))
  try {
    writeFileSync(join(dir, 'rules.yml'), ruleFile())
    const checked = await promtool(bin, ['check', 'rules', join(dir, 'rules.yml')])
    assert.equal(checked.code, 0, checked.output)
    assert.match(checked.output, /SUCCESS: \d+ rules found/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a real Prometheus scrapes the app port, evaluates the alerts and every dashboard query', { skip, timeout: 180_000 }, async (t) => {
  const { port, drain } = await app(t)
  const config = toYaml({
    global: { scrape_interval: '1s', evaluation_interval: '1s' },
    rule_files: ['rules.yml'],
    scrape_configs: [{ job_name: 'lameduck', static_configs: [{ targets: [`127.0.0.1:${port}`] }] }]
  })
  const prometheus = await startPrometheus(bin, config, { 'rules.yml': ruleFile() })
  t.after(async () => { await prometheus.stop() })

  const value = async (expr: string): Promise<number | null> => {
    const r = await prometheus.query(expr)
    assert.equal(r.status, 'success', `${expr}: ${r.error ?? ''}`)
    const first = r.data?.result[0]
    return first === undefined ? null : Number(first.value[1])
  }
  // Scraped before the drains, as in a cluster: the counters' increase() starts from 0.
  await until(async () => await value('lameduck_drains_cut_total') === 0, 'the target scraped before the drains', { timeoutMs: 60_000 })
  await drain()
  await until(async () => await value('lameduck_offline_duration_seconds_count{outcome="offline"}') === 2, 'the drains scraped', { timeoutMs: 60_000 })
  assert.equal(await value('up{job="lameduck"}'), 1)
  assert.equal(await value('lameduck_drains_cut_total'), 1)
  const p95 = await value('histogram_quantile(0.95, sum by (le) (lameduck_offline_duration_seconds_bucket{outcome="offline"}))')
  assert.ok(p95 !== null && p95 > 0 && p95 <= 0.5, `p95 in the first bucket (0.5 s): ${p95}`)
  // The scrape itself: no error on the target.
  const targets = await prometheus.api<{ data: { activeTargets: Array<{ health: string, lastError: string }> } }>('/api/v1/targets')
  assert.deepEqual(targets.data.activeTargets.map((x) => [x.health, x.lastError]), [['up', '']])

  for (const { panel, expr } of dashboardQueries()) {
    const r = await prometheus.query(expr)
    assert.equal(r.status, 'success', `dashboard panel '${panel}': ${expr}: ${r.error ?? ''}`)
  }
  // Every alert rule evaluated without an error (health 'ok' once evaluated).
  type Rules = { data: { groups: Array<{ rules: Array<{ name: string, health: string, lastError?: string }> }> } }
  const rules = await until(async () => {
    const got = await prometheus.api<Rules>('/api/v1/rules')
    const all = got.data.groups.flatMap((g) => g.rules)
    return all.length > 0 && all.every((r) => r.health !== 'unknown') ? all : null
  }, 'every rule evaluated', { timeoutMs: 60_000 })
  assert.deepEqual(rules.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.lastError ?? ''}`), [])
  // The cut drain fires LameduckDrainCut (increase over 15 m > 0).
  await until(async () => {
    const alerts = await prometheus.api<{ data: { alerts: Array<{ labels: { alertname: string } }> } }>('/api/v1/alerts')
    return alerts.data.alerts.some((a) => a.labels.alertname === 'LameduckDrainCut')
  }, 'LameduckDrainCut firing or pending', { timeoutMs: 60_000 })
})
