// The rollout lab with gRPC behind real Envoy 1.40.0 sidecars (`--transport grpc --sidecar envoy-real`):
// rows for docs/benchmarks.md's "Rollout lab with gRPC" table, in its columns, plus each lameduck
// provider's sidecar phase (its drain report's sidecarMs).
//   node --conditions=@lameduck/source test/real/envoy-grpc-rollout-table.ts [runs=1] [--service] [--resolver] [--nacos]
import { runRollout, type RolloutOptions, type RolloutReport } from '@lameduck/devkit'
import { envoyBinary } from './helpers/envoy.ts'

process.env.LAMEDUCK_ENVOY_BIN ??= envoyBinary()
const runs = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 1)
const flag = (name: string): boolean => process.argv.includes(name)

interface Cell { path: string, consumer: string, mode: 'naive' | 'lameduck', options: RolloutOptions }
const eureka: RolloutOptions = { registry: 'eureka' }
const cells: Cell[] = [
  { path: 'Eureka, real Envoy sidecars', consumer: 'plain', mode: 'naive', options: { ...eureka, consumer: 'plain' } },
  { path: 'Eureka, real Envoy sidecars', consumer: 'plain', mode: 'lameduck', options: { ...eureka, consumer: 'plain' } },
  ...flag('--resolver') ? [{ path: 'Eureka, real Envoy sidecars', consumer: '`lameduck://`', mode: 'lameduck' as const, options: { ...eureka, consumer: 'balancer' as const } }] : [],
  ...flag('--service') ? (['naive', 'lameduck'] as const).map((mode) => ({ path: 'Kubernetes Service, real Envoy sidecars', consumer: 'grpc-js, 4 channels', mode, options: { registry: 'none' as const } })) : [],
  ...flag('--nacos') ? (['naive', 'lameduck'] as const).map((mode) => ({ path: 'Nacos (push), real Envoy sidecars', consumer: 'plain', mode, options: { registry: 'nacos' as const, consumer: 'plain' as const } })) : []
]

const s = (n: number): string => `${(n / 1000).toFixed(1)} s`
const range = (xs: number[]): string => xs.length === 0 ? '–' : Math.min(...xs) === Math.max(...xs) ? `${Math.round(xs[0]!)}` : `${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))}`
const sidecarMs = (r: RolloutReport): number[] => r.offline.map((o) => Number(o.drain?.sidecarMs)).filter((n) => Number.isFinite(n))
const failed = (r: RolloutReport): string => r.failed === 0 ? '**0**' : `${r.failed} (${((100 * r.failed) / Math.max(1, r.total)).toFixed(2)} %)`
const row = (c: Cell, r: RolloutReport): string =>
  `| ${c.path} | ${c.consumer} | ${c.mode} | ${r.total} | ${failed(r)} | ${r.failures.refused} / ${r.failures.noInstance} / ${r.failures.reset} / ${r.failures.timeout} | ${s(Number(r.scenario.windowMs))} | ${r.offline.filter((o) => o.killed).length} | ${s(r.rolloutMs)} | ${r.eventLoopLag.consumer.p99Ms} / ${r.eventLoopLag.providers.p99Ms} ms | ${range(sidecarMs(r))} |`

const rows: string[] = []
const log = (line: string): void => { process.stderr.write(`${line}\n`) }
for (let run = 1; run <= runs; run++) {
  for (const c of cells) {
    const r = await runRollout({ transport: 'grpc', sidecar: 'envoy-real', mode: c.mode, ...c.options })
    rows.push(row(c, r))
    log(rows.at(-1)!)
    if (r.failed > 0) log(`  e.g. ${JSON.stringify(r.failureSamples.slice(0, 3).map((f) => f.detail))}`)
  }
}

process.stdout.write([
  '| path | consumer | providers | calls | failed | failures | window | SIGKILLed | rollout time | lag p99 consumer / providers | sidecar phase (ms, per pod) |',
  '|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|',
  ...rows
].join('\n') + '\n')
