// The rollout lab with Envoy sidecars, the devkit stand-in beside the real Envoy 1.40.0 binary:
// one markdown table (docs/benchmarks.md, "Rollout lab with real Envoy sidecars") with the sidecar
// phase's duration as each lameduck provider's drain report gives it (the engine's sidecar option:
// drain_listeners, then the count or the idle rule).
//   node --conditions=@lameduck/source test/real/envoy-rollout-table.ts [runs=1] [--real-eureka]
import { runRollout, type RolloutMode, type RolloutOptions, type RolloutReport } from '@lameduck/devkit'
import { envoyBinary } from './helpers/envoy.ts'
import { runRealRollout } from './rollout/run.ts'

process.env.LAMEDUCK_ENVOY_BIN ??= envoyBinary()
const runs = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 1)
const realEureka = process.argv.includes('--real-eureka')
const modes: Array<{ name: string, options: RolloutOptions & { mode: RolloutMode } }> = [
  { name: 'naive', options: { mode: 'naive' } },
  { name: 'sleep 30', options: { mode: 'sleep', sleepSeconds: 30 } },
  { name: 'lameduck', options: { mode: 'lameduck' } }
]
const sidecars: Array<{ name: string, options: RolloutOptions }> = [
  { name: 'stand-in', options: { sidecar: 'stand-in' } },
  { name: 'real Envoy 1.40.0', options: { sidecar: 'envoy-real' } },
  { name: 'stand-in, EXIT_ON_ZERO', options: { sidecar: 'stand-in', exitOnZeroActiveConnections: true } },
  { name: 'real Envoy 1.40.0, EXIT_ON_ZERO', options: { sidecar: 'envoy-real', exitOnZeroActiveConnections: true } }
]

const s = (n: number): string => `${(n / 1000).toFixed(1)} s`
const range = (xs: number[]): string => xs.length === 0 ? '–' : Math.min(...xs) === Math.max(...xs) ? `${Math.round(xs[0]!)}` : `${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))}`
const sidecarMs = (r: RolloutReport): number[] => r.offline.map((o) => Number(o.drain?.sidecarMs)).filter((n) => Number.isFinite(n))
const failures = (r: RolloutReport): string => `${r.failures.refused} / ${r.failures.noInstance} / ${r.failures.reset} / ${r.failures.status5xx} / ${r.failures.timeout}`
const row = (path: string, sidecar: string, mode: string, r: RolloutReport): string =>
  `| ${path} | ${sidecar} | ${mode} | ${r.total} | ${r.failed} (${((100 * r.failed) / Math.max(1, r.total)).toFixed(2)} %) | ${failures(r)} | ${range(sidecarMs(r))} | ${s(Math.max(0, ...r.offline.map((o) => o.offlineMs)))} | ${r.offline.filter((o) => o.killed).length} | ${s(r.rolloutMs)} |`

const rows: string[] = []
const log = (line: string): void => { process.stderr.write(`${line}\n`) }
for (let run = 1; run <= runs; run++) {
  for (const sidecar of sidecars) {
    for (const mode of modes) {
      const r = await runRollout({ registry: 'eureka', consumer: 'plain', rps: 500, ...sidecar.options, ...mode.options })
      rows.push(row('Eureka (devkit)', sidecar.name, mode.name, r))
      log(rows.at(-1)!)
    }
  }
  if (realEureka) {
    for (const mode of ['naive', 'lameduck'] as const) {
      const r = await runRealRollout({ registry: 'eureka-real', consumer: 'node', mode, sidecar: 'envoy-real' })
      rows.push(row('Eureka (real server, ×0.1), eureka-js-client', 'real Envoy 1.40.0', mode, r))
      log(rows.at(-1)!)
    }
  }
}

process.stdout.write([
  '| path | sidecar | mode | requests | failed | failures | sidecar phase (ms, per pod) | pod offline (max) | SIGKILLed | rollout time |',
  '|---|---|---|---:|---:|---|---:|---:|---:|---:|',
  ...rows
].join('\n') + '\n')
