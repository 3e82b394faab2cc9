// `npm run bench` part: the rollout lab's full matrix — traffic paths × modes, with the
// faithful stand-ins (Eureka peers, Nacos snapshot / push off / cluster, Istio-style
// sidecars with and without EXIT_ON_ZERO_ACTIVE_CONNECTIONS) — then the transports
// (https, h2c, h2, grpc) on the Service and Eureka paths, then a sweep of the `sleep N`
// preStop to find the N that matches lameduck. Every cell uses the plain consumer
// (round robin, keep-alive, no retries). Prints markdown.
//   node --conditions=@lameduck/source packages/devkit/bench/rollout.ts [--rps 500] [--quick]
import { parseArgs } from 'node:util'
import { runRollout, type RolloutOptions, type RolloutReport } from '@lameduck/devkit'

const { values } = parseArgs({ options: { rps: { type: 'string', default: '500' }, quick: { type: 'boolean' } } })
const rps = Number(values.rps)
const SCRIPT = `\`packages/devkit/bench/rollout.ts\` (\`npm run bench\`) on ${new Date().toISOString().slice(0, 10)}`

interface Row { path: string, mode: string, report: RolloutReport }

const paths: Array<{ name: string, options: RolloutOptions }> = [
  { name: 'Kubernetes Service', options: { registry: 'none' } },
  { name: 'Eureka', options: { registry: 'eureka' } },
  { name: 'Eureka cluster (2 peers)', options: { registry: 'eureka', cluster: 2 } },
  { name: 'Nacos (push)', options: { registry: 'nacos' } },
  { name: 'Nacos (push off)', options: { registry: 'nacos', nacosPush: false } },
  { name: 'Nacos cluster (2 nodes)', options: { registry: 'nacos', cluster: 2 } },
  { name: 'Eureka + Istio sidecar', options: { registry: 'eureka', sidecar: true } },
  { name: 'Eureka + Istio sidecar, EXIT_ON_ZERO_ACTIVE_CONNECTIONS', options: { registry: 'eureka', sidecar: true, exitOnZeroActiveConnections: true } }
]
const modes: Array<{ name: string, options: RolloutOptions }> = [
  { name: 'naive', options: { mode: 'naive' } },
  { name: 'sleep 30', options: { mode: 'sleep', sleepSeconds: 30 } },
  { name: 'lameduck', options: { mode: 'lameduck' } }
]
const transports = ['https', 'h2c', 'h2', 'grpc'] as const

async function run (path: string, mode: string, options: RolloutOptions): Promise<Row> {
  const report = await runRollout({ rps, consumer: 'plain', ...options })
  process.stderr.write(`${path} / ${mode}: ${report.failed}/${report.total} failed, ${report.offline.filter((o) => o.killed).length} SIGKILLed\n`)
  return { path, mode, report }
}

const ms = (n: number | null | undefined): string => n === null || n === undefined ? '–' : `${(n / 1000).toFixed(1)} s`
const pct = (r: RolloutReport): string => `${r.failed} (${((100 * r.failed) / Math.max(1, r.total)).toFixed(2)} %)`
const fail = (r: RolloutReport): string => `${r.failures.refused} / ${r.failures.noInstance} / ${r.failures.reset} / ${r.failures.status5xx} / ${r.failures.timeout}`
const maxOffline = (r: RolloutReport): number => Math.max(0, ...r.offline.map((o) => o.offlineMs))
const lag = (r: RolloutReport): string => `${r.eventLoopLag.consumer.p99Ms} / ${r.eventLoopLag.providers.p99Ms} ms`
const table = (rows: Row[]): string[] => [
  '| path | mode | requests | failed | failures | window | pod offline (max) | SIGKILLed | rollout time | lag p99 consumer / providers |',
  '|---|---|---:|---:|---|---:|---:|---:|---:|---:|',
  ...rows.map(({ path, mode, report: r }) => `| ${path} | ${mode} | ${r.total} | ${pct(r)} | ${fail(r)} | ${ms(Number(r.scenario.windowMs))} | ${ms(maxOffline(r))} | ${r.offline.filter((o) => o.killed).length} | ${ms(r.rolloutMs)} | ${lag(r)} |`)
]

const rows: Row[] = []
for (const path of values.quick ? paths.slice(0, 2) : paths) {
  for (const mode of modes) rows.push(await run(path.name, mode.name, { ...path.options, ...mode.options }))
}
const transportRows: Row[] = []
for (const path of values.quick ? paths.slice(0, 1) : paths.slice(0, 2)) {
  for (const transport of values.quick ? ['h2'] as const : transports) {
    for (const mode of ['naive', 'lameduck'] as const) transportRows.push(await run(`${path.name}, ${transport}`, mode, { ...path.options, transport, mode }))
  }
}

const out: string[] = []
out.push(`## Rollout lab: paths × modes\n\nWritten by ${SCRIPT}. 3 providers, rolling update maxSurge 1 / maxUnavailable 0, open-loop ${rps} req/s (10 % slow 300 ms requests) from a plain consumer (round robin over its list, keep-alive, no retries). Cache periods and Istio's drain durations scaled ×0.05 (a 90 s window runs as 4.5 s); fixed delays run at full length: Eureka's 500 ms replication batch, Nacos's 100 ms push check and 1 s distro sync, Kubernetes' 1 s endpoint lag. No lab margin: the window is what the calculator gives. Failures: refused / no instance / reset / 5xx / timeout. Lag: event-loop delay p99 measured in the run.\n`)
out.push(...table(rows))
out.push(`\n## Rollout lab: transports\n\nWritten by ${SCRIPT}. The same rollout with the providers serving HTTPS (HTTP/1.1 over TLS), h2c (HTTP/2 cleartext) or h2 (HTTP/2 over TLS, ALPN) and the consumer speaking it (undici, \`allowH2\`), or gRPC (grpc-js servers under \`attachGrpc\` in lameduck mode, bare with \`tryShutdown()\` on SIGTERM in naive mode; grpc-js clients: 4 channels on the Service address, or a channel per address picked round robin from the Eureka list).\n`)
out.push(...table(transportRows))

// What does `sleep N` need on the Eureka path to lose nothing, and what does it cost?
const sweep: Row[] = []
for (const n of values.quick ? [60, 100] : [30, 60, 90, 100, 120]) sweep.push(await run('Eureka', `sleep ${n}`, { registry: 'eureka', mode: 'sleep', sleepSeconds: n }))
const lameduckEureka = rows.find((r) => r.path === 'Eureka' && r.mode === 'lameduck')
out.push(`\n## \`sleep N\` against lameduck (Eureka path, plain consumer, window 60 s)\n\nWritten by ${SCRIPT}.\n`)
out.push('| preStop | N (manifest seconds) | failed | rollout time | pod offline (max) |')
out.push('|---|---:|---:|---:|---:|')
for (const { mode, report: r } of sweep) out.push(`| \`sleep\` | ${mode.split(' ')[1]} | ${pct(r)} | ${ms(r.rolloutMs)} | ${ms(maxOffline(r))} |`)
if (lameduckEureka) out.push(`| \`lameduck prestop\` | – | ${pct(lameduckEureka.report)} | ${ms(lameduckEureka.report.rolloutMs)} | ${ms(maxOffline(lameduckEureka.report))} |`)
process.stdout.write(out.join('\n') + '\n')
