// `npm run bench` part: the rollout lab's full matrix — traffic paths × modes at
// a higher load — and a sweep of the `sleep N` preStop to find the N that
// matches lameduck, with what it costs in rollout time. Prints markdown.
//   node --conditions=@lameduck/source packages/devkit/bench/rollout.ts [--rps 500] [--quick]
import { parseArgs } from 'node:util'
import { runRollout, type RolloutOptions, type RolloutReport } from '@lameduck/devkit'

const { values } = parseArgs({ options: { rps: { type: 'string', default: '500' }, quick: { type: 'boolean' } } })
const rps = Number(values.rps)

interface Row { path: string, mode: string, report: RolloutReport }

const paths: Array<{ name: string, options: RolloutOptions }> = [
  { name: 'Kubernetes Service', options: { registry: 'none' } },
  { name: 'Eureka', options: { registry: 'eureka' } },
  { name: 'Nacos', options: { registry: 'nacos' } },
  { name: 'Eureka + Envoy sidecar', options: { registry: 'eureka', sidecar: true } }
]
const modes: Array<{ name: string, options: RolloutOptions }> = [
  { name: 'naive', options: { mode: 'naive' } },
  { name: 'sleep 30', options: { mode: 'sleep', sleepSeconds: 30 } },
  { name: 'lameduck', options: { mode: 'lameduck' } }
]

const rows: Row[] = []
for (const path of values.quick ? paths.slice(0, 2) : paths) {
  for (const mode of modes) {
    const report = await runRollout({ rps, ...path.options, ...mode.options })
    rows.push({ path: path.name, mode: mode.name, report })
    process.stderr.write(`${path.name} / ${mode.name}: ${report.failed}/${report.total} failed\n`)
  }
}

const ms = (n: number | null | undefined): string => n === null || n === undefined ? '–' : `${(n / 1000).toFixed(1)} s`
const pct = (r: RolloutReport): string => `${r.failed} (${((100 * r.failed) / Math.max(1, r.total)).toFixed(2)} %)`
const fail = (r: RolloutReport): string => `${r.failures.refused} / ${r.failures.noInstance} / ${r.failures.reset} / ${r.failures.status5xx} / ${r.failures.timeout}`
const maxOffline = (r: RolloutReport): number => Math.max(0, ...r.offline.map((o) => o.offlineMs))

const out: string[] = []
out.push(`## Rollout lab: paths × modes\n\n3 providers, rolling update maxSurge 1 / maxUnavailable 0, open-loop ${rps} req/s (10 % slow 300 ms requests), production durations scaled ×0.05 (a 90 s window runs as 4.5 s). Failures: refused / no instance / reset / 5xx / timeout.\n`)
out.push('| path | mode | requests | failed | failures | window | pod offline (max) | SIGKILLed | rollout time |')
out.push('|---|---|---:|---:|---|---:|---:|---:|---:|')
for (const { path, mode, report: r } of rows) {
  out.push(`| ${path} | ${mode} | ${r.total} | ${pct(r)} | ${fail(r)} | ${ms(Number(r.scenario.windowMs))} | ${ms(maxOffline(r))} | ${r.offline.filter((o) => o.killed).length} | ${ms(r.rolloutMs)} |`)
}

// What does `sleep N` need on the Eureka path to lose nothing, and what does it cost?
const sweep: Row[] = []
for (const n of values.quick ? [60, 100] : [30, 60, 90, 100, 120]) {
  const report = await runRollout({ rps, registry: 'eureka', mode: 'sleep', sleepSeconds: n })
  sweep.push({ path: 'Eureka', mode: `sleep ${n}`, report })
  process.stderr.write(`Eureka / sleep ${n}: ${report.failed}/${report.total} failed\n`)
}
const lameduckEureka = rows.find((r) => r.path === 'Eureka' && r.mode === 'lameduck')
out.push('\n## `sleep N` against lameduck (Eureka path, window 90 s + margin)\n')
out.push('| preStop | N (manifest seconds) | failed | rollout time | pod offline (max) |')
out.push('|---|---:|---:|---:|---:|')
for (const { mode, report: r } of sweep) out.push(`| \`sleep\` | ${mode.split(' ')[1]} | ${pct(r)} | ${ms(r.rolloutMs)} | ${ms(maxOffline(r))} |`)
if (lameduckEureka) out.push(`| \`lameduck prestop\` | – | ${pct(lameduckEureka.report)} | ${ms(lameduckEureka.report.rolloutMs)} | ${ms(maxOffline(lameduckEureka.report))} |`)
process.stdout.write(out.join('\n') + '\n')
