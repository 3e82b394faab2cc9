import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { parse as parseYaml } from 'yaml'
import { request } from 'undici'
import { startServer, stop, until } from './helpers.ts'

const parse = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => Array<{ name: string, type: string }>
const dir = new URL('../../../examples/k8s/monitoring/', import.meta.url)

test('examples/k8s/monitoring: the PrometheusRule and the Grafana dashboard use only metric names lameduck serves', async (t) => {
  const s = await startServer()
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  const served = new Set(parse(await (await request(`${s.admin}/metrics`)).body.text()).map((f) => f.name))

  const rule = parseYaml(readFileSync(new URL('prometheus-rule.yaml', dir), 'utf8')) as { kind: string, spec: { groups: Array<{ rules: Array<{ alert: string, expr: string }> }> } }
  assert.equal(rule.kind, 'PrometheusRule')
  const alerts = rule.spec.groups.flatMap((g) => g.rules)
  assert.deepEqual(alerts.map((a) => a.alert).sort(), ['LameduckDeregistrationUnconfirmed', 'LameduckDrainCut', 'LameduckDrainOverBudget', 'LameduckDrainSlowerThanWindow', 'LameduckDrainsRoutinelySlow'])
  const dashboard = JSON.parse(readFileSync(new URL('grafana-dashboard.json', dir), 'utf8')) as { panels: Array<{ targets: Array<{ expr: string }> }> }
  const exprs = [...alerts.map((a) => a.expr), ...dashboard.panels.flatMap((p) => p.targets.map((x) => x.expr))]
  // A histogram's samples are its family name plus _bucket, _sum or _count.
  const used = new Set(exprs.flatMap((e) => e.match(/\blameduck_[a-z_]+/g) ?? []).map((n) => n.replace(/_(bucket|sum|count)$/, '')))
  assert.ok(used.size >= 10, `names used: ${[...used].join(', ')}`)
  for (const name of used) assert.ok(served.has(name), `${name} is served (served: ${[...served].join(', ')})`)
  for (const name of ['lameduck_drains_cut_total', 'lameduck_deregistrations_unconfirmed_total', 'lameduck_draining_seconds', 'lameduck_offline_duration_seconds']) assert.ok(used.has(name), `the alerts or the dashboard use ${name}`)
})
