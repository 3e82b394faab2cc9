// The rollout lab on the `kubernetes` path of a real control plane (`lameduck-devkit rollout --registry
// kubernetes` delegates here from a clone):
//   node --conditions=@lameduck/source test/k8s/rollout.ts --mode lameduck --consumer balancer
// Needs the control plane of test/k8s/install.sh. Prints the lab's summary table (--json, --chart write the report).
import { writeFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { renderChart, summaryTable, type RolloutMode } from '@lameduck/devkit'
import { skipReason, startControlPlane } from './helpers/control-plane.ts'
import { runKubernetesRollout } from './rollout/run.ts'

const USAGE = `Usage: node --conditions=@lameduck/source test/k8s/rollout.ts [options]

A rolling update of the lab's providers, each mirrored as a Pod into a real kube-apiserver; the consumer
discovers them from the EndpointSlices the real kube-controller-manager writes (kubernetesDiscovery()).

Options:
  --mode naive|sleep|lameduck     [lameduck]
  --consumer balancer|plain       @lameduck/balancer, or round robin over the discovery list  [balancer for lameduck, else plain]
  --providers N                   replicas                                  [3]
  --rps N                         request rate                              [300]
  --scale F                       production durations × F                  [0.1]
  --endpoint-lag-ms N             the lameduck providers' fixed endpoint term  [1000]
  --json FILE                     write the report as JSON
  --chart FILE                    write an SVG chart
  --quiet                         no progress lines
`

const { values } = parseArgs({
  options: {
    registry: { type: 'string' },
    mode: { type: 'string', default: 'lameduck' },
    consumer: { type: 'string' },
    providers: { type: 'string' },
    rps: { type: 'string' },
    scale: { type: 'string' },
    'endpoint-lag-ms': { type: 'string' },
    json: { type: 'string' },
    chart: { type: 'string' },
    quiet: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' }
  }
})
if (values.help) { process.stdout.write(USAGE); process.exit(0) }
// Checked before the control plane starts (a few seconds): a typo fails at once.
const usage = (message: string): never => { process.stderr.write(`test/k8s/rollout.ts: ${message}\n`); process.exit(2) }
if (!['naive', 'sleep', 'lameduck'].includes(values.mode)) usage(`--mode: must be naive, sleep or lameduck, got '${values.mode}'`)
if (values.consumer !== undefined && !['balancer', 'plain'].includes(values.consumer)) usage(`--consumer: must be balancer or plain, got '${values.consumer}'`)
const reason = skipReason()
if (reason !== undefined) usage(reason)
const log = values.quiet ? undefined : (line: string): void => { process.stdout.write(`${new Date().toISOString().slice(11, 23)}  ${line}\n`) }
const cp = await startControlPlane()
try {
  const { report, stats } = await runKubernetesRollout(cp, {
    mode: values.mode as RolloutMode,
    ...(values.consumer ? { consumer: values.consumer as 'balancer' | 'plain' } : {}),
    ...(values.providers ? { providers: Number(values.providers) } : {}),
    ...(values.rps ? { rps: Number(values.rps) } : {}),
    ...(values.scale ? { scale: Number(values.scale) } : {}),
    ...(values['endpoint-lag-ms'] ? { endpointLagMs: Number(values['endpoint-lag-ms']) } : {}),
    ...(log ? { log } : {})
  })
  const title = `kubernetes / ${report.scenario.mode}`
  process.stdout.write(`\n${summaryTable([{ title, report }])}\n(${stats.created} pods made Ready and ${stats.deleted} DELETEd through the API; the consumer read ${stats.events()} EndpointSlice events)\n`)
  if (values.json) { await writeFile(values.json, JSON.stringify(report, null, 2)); process.stdout.write(`report: ${values.json}\n`) }
  if (values.chart) { await writeFile(values.chart, renderChart([{ title, report }])); process.stdout.write(`chart: ${values.chart}\n`) }
} finally {
  await cp.stop()
}
