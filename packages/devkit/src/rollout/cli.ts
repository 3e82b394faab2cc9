// `lameduck-devkit rollout`: one rolling update under load, with a loss report.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { asFlags, numeric } from '../flags.ts'
import { renderChart } from './chart.ts'
import type { RolloutOptions } from './options.ts'
import { runRollout } from './rollout.ts'
import { summaryTable } from './summary.ts'

export const ROLLOUT_USAGE = `Usage: lameduck-devkit rollout [options]

A Kubernetes rolling update of real provider processes under open-loop load,
with a loss report.

Options:
  --registry eureka|nacos|none   traffic path (none = Kubernetes Service)   [eureka]
                                 (eureka-real: the real Netflix Eureka server and a Java consumer,
                                  run from a clone of the repository: test/real/rollout.ts;
                                  kubernetes: a real kube-apiserver and EndpointSlice controller,
                                  kubernetesDiscovery() consumers: test/k8s/rollout.ts)
  --cluster N                    registry servers: Eureka peers / Nacos nodes  [1]
  --no-push                      Nacos: no UDP push, the consumer polls (cacheMillis)
  --sidecar [stand-in|envoy-real]  an Istio-style Envoy sidecar in front of every provider: the devkit's
                                 stand-in, or the real Envoy 1.40.0 binary (LAMEDUCK_ENVOY_BIN or
                                 ~/.cache/lameduck/envoy-1.40.0, from test/real/envoy/install.sh)  [stand-in]
  --exit-on-zero-active-connections  the sidecar's pilot-agent runs with EXIT_ON_ZERO_ACTIVE_CONNECTIONS
  --transport http|https|h2c|h2|grpc  what providers serve and the consumer speaks (Service, Eureka; grpc: Nacos too)  [http]
                                 behind --sidecar: http, or grpc with envoy-real (h2c in, HTTP/2 to the app)
  --mode naive|sleep|lameduck    no preStop | preStop sleep | lameduck prestop  [lameduck]
  --consumer plain|balancer      round robin over the discovery list, keep-alive, no retries
                                 (what services do today) | @lameduck/balancer
                                 [plain for naive and sleep, balancer for lameduck]
  --providers N                  replicas                                    [3]
  --rps N                        request rate                                [300]
  --scale F                      multiplies production durations (90 s → 4.5 s at 0.05)  [0.05]
  --sleep-s N                    sleep of the 'sleep' mode, as in the manifest  [30]
  --grace-s N                    terminationGracePeriodSeconds (unscaled)    [30, or lameduck plan's]
  --endpoint-lag-ms N            Kubernetes endpoint propagation lag         [1000]
  --max-surge N                  rolling update maxSurge                     [1]
  --max-unavailable N            rolling update maxUnavailable               [0]
  --json FILE                    write the report as JSON
  --chart FILE                   write an SVG chart
  --quiet                        no progress lines

Example:
  lameduck-devkit rollout --registry eureka --mode naive --json naive.json --chart naive.svg
`

/** Option → the flag that sets it, so a bad value is reported under the flag typed. */
const FLAG_OF = {
  registry: '--registry',
  cluster: '--cluster',
  transport: '--transport',
  mode: '--mode',
  sidecar: '--sidecar',
  providers: '--providers',
  consumer: '--consumer',
  rps: '--rps',
  scale: '--scale',
  sleepSeconds: '--sleep-s',
  gracePeriodSeconds: '--grace-s',
  endpointLagMs: '--endpoint-lag-ms',
  maxSurge: '--max-surge',
  maxUnavailable: '--max-unavailable'
} satisfies Partial<Record<keyof RolloutOptions, string>>

const SIDECAR_KINDS = ['stand-in', 'envoy-real']

/** `--sidecar` alone, `--sidecar KIND` or `--sidecar=KIND`: the kind moves to `--sidecar-kind` so the flag stays a boolean. */
function sidecarArgs (argv: string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a.startsWith('--sidecar=')) { out.push('--sidecar', `--sidecar-kind=${a.slice('--sidecar='.length)}`); continue }
    out.push(a)
    if (a === '--sidecar' && SIDECAR_KINDS.includes(argv[i + 1] ?? '')) out.push(`--sidecar-kind=${argv[++i]!}`)
  }
  return out
}

export async function runRolloutCli (argv: string[], out: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  const { values } = parseArgs({
    args: sidecarArgs(argv),
    options: {
      registry: { type: 'string' },
      sidecar: { type: 'boolean' },
      'sidecar-kind': { type: 'string' },
      cluster: { type: 'string' },
      'no-push': { type: 'boolean' },
      'exit-on-zero-active-connections': { type: 'boolean' },
      transport: { type: 'string' },
      mode: { type: 'string' },
      providers: { type: 'string' },
      consumer: { type: 'string' },
      rps: { type: 'string' },
      scale: { type: 'string' },
      'sleep-s': { type: 'string' },
      'grace-s': { type: 'string' },
      'endpoint-lag-ms': { type: 'string' },
      'max-surge': { type: 'string' },
      'max-unavailable': { type: 'string' },
      json: { type: 'string' },
      chart: { type: 'string' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) { out(ROLLOUT_USAGE); return 0 }
  if (values.registry?.endsWith('-real')) return realRollout(argv, out)
  if (values.registry === 'kubernetes') return delegate(K8S_RUNNER, argv, out, 'the kubernetes path needs a clone of the lameduck repository and the control plane of test/k8s/install.sh (Go):\n  bash test/k8s/install.sh && node --conditions=@lameduck/source test/k8s/rollout.ts --mode lameduck|naive --consumer balancer|plain\n')
  const n = (v: string | undefined, flag: string): number | undefined => v === undefined ? undefined : numeric(`--${flag}`, v)
  const options: RolloutOptions = {
    registry: values.registry as RolloutOptions['registry'],
    sidecar: values['sidecar-kind'] !== undefined ? values['sidecar-kind'] as RolloutOptions['sidecar'] : values.sidecar,
    cluster: n(values.cluster, 'cluster'),
    nacosPush: values['no-push'] ? false : undefined,
    exitOnZeroActiveConnections: values['exit-on-zero-active-connections'],
    transport: values.transport as RolloutOptions['transport'],
    mode: values.mode as RolloutOptions['mode'],
    providers: n(values.providers, 'providers'),
    consumer: values.consumer as RolloutOptions['consumer'],
    rps: n(values.rps, 'rps'),
    scale: n(values.scale, 'scale'),
    sleepSeconds: n(values['sleep-s'], 'sleep-s'),
    gracePeriodSeconds: n(values['grace-s'], 'grace-s'),
    endpointLagMs: n(values['endpoint-lag-ms'], 'endpoint-lag-ms'),
    maxSurge: n(values['max-surge'], 'max-surge'),
    maxUnavailable: n(values['max-unavailable'], 'max-unavailable'),
    ...(values.quiet ? {} : { log: (line: string) => out(`${new Date().toISOString().slice(11, 23)}  ${line}\n`) })
  }
  for (const [k, v] of Object.entries(options)) if (v === undefined) delete (options as Record<string, unknown>)[k]
  const report = await asFlags(FLAG_OF, () => runRollout(options))
  const title = `${report.scenario.registry}${report.scenario.sidecar === 'envoy-real' ? '+envoy-real' : report.scenario.sidecar ? '+envoy' : ''} / ${report.scenario.mode}`
  out(`\n${summaryTable([{ title, report }])}\n`)
  if (values.json) { await writeFile(values.json, JSON.stringify(report, null, 2)); out(`report: ${values.json}\n`) }
  if (values.chart) { await writeFile(values.chart, renderChart([{ title, report }])); out(`chart: ${values.chart}\n`) }
  return 0
}

// The real servers (JVMs built by Maven) live in the repository's test/real, not in this package.
const REAL_RUNNER = fileURLToPath(new URL('../../../../test/real/rollout.ts', import.meta.url))
// So does the real Kubernetes control plane (built from the Go module proxy), in test/k8s.
const K8S_RUNNER = fileURLToPath(new URL('../../../../test/k8s/rollout.ts', import.meta.url))

/** Runs a repository script with the same flags when run from a clone, else says how. */
function delegate (runner: string, argv: string[], out: (s: string) => void, missing: string): number {
  if (!existsSync(runner)) { out(`lameduck-devkit rollout: ${missing}`); return 2 }
  const r = spawnSync(process.execPath, ['--conditions=@lameduck/source', runner, ...argv], { stdio: 'inherit' })
  return r.status ?? 1
}

/** --registry eureka-real|nacos-real: delegates to test/real/rollout.ts when run from a clone, else says where it is. */
function realRollout (argv: string[], out: (s: string) => void): number {
  if (!existsSync(REAL_RUNNER)) {
    out('lameduck-devkit rollout: the real-server registries (eureka-real, nacos-real) need a clone of the lameduck repository, a JDK 17+ and Maven:\n' +
      '  bash test/real/build.sh && node --conditions=@lameduck/source test/real/rollout.ts --registry eureka-real --consumer spring|node|balancer --mode lameduck|naive\n')
    return 2
  }
  const r = spawnSync(process.execPath, ['--conditions=@lameduck/source', REAL_RUNNER, ...argv], { stdio: 'inherit' })
  return r.status ?? 1
}
