// The rollout lab against the real servers:
//   node --conditions=@lameduck/source test/real/rollout.ts --registry eureka-real --consumer spring --mode lameduck
// Needs the jars of test/real/build.sh. Prints the lab's summary table (and --json FILE writes the report).
import { writeFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { summaryTable, type RolloutMode, type SidecarKind } from '@lameduck/devkit'
import type { RealConsumer } from './rollout/path-eureka-real.ts'
import { runRealRollout, type RealRegistry } from './rollout/run.ts'
import type { NacosVersion } from './helpers/nacos-modern.ts'

const USAGE = `Usage: node --conditions=@lameduck/source test/real/rollout.ts [options]

A rolling update of 3 providers on the real Netflix Eureka server or a real Nacos server, under load from a consumer.

Options:
  --registry eureka-real|nacos-real   the real server                      [eureka-real]
  --nacos-version 2.3.1|3.1.0         nacos-real: the server version       [2.3.1]
  --consumer spring|node|balancer     Java (Spring Cloud Eureka + LoadBalancer), eureka-js-client round robin,
                                      or @lameduck/balancer                  [spring]
  --mode naive|sleep|lameduck                                              [lameduck]
  --sidecar stand-in|envoy-real       an Istio-style Envoy sidecar in front of every provider:
                                      the devkit stand-in or the real Envoy 1.40.0 binary  [none]
  --scale F                           production periods × F (0.1: fetch 3 s)  [0.1]
  --providers N                       replicas                             [3]
  --rps N                             load of the node/balancer consumers (the Java one calls every 5 ms)  [200]
  --json FILE                         write the report as JSON
  --quiet                             no progress lines
`

await main().catch((err: Error & { code?: string }) => {
  process.stderr.write(`test/real/rollout.ts: ${err.code ? `[${err.code}] ` : ''}${err.message}\n`)
  process.exitCode = 1
})

async function main (): Promise<void> {
  const { values } = parseArgs({
    options: {
      registry: { type: 'string', default: 'eureka-real' },
      'nacos-version': { type: 'string' },
      consumer: { type: 'string', default: 'spring' },
      mode: { type: 'string', default: 'lameduck' },
      sidecar: { type: 'string' },
      scale: { type: 'string' },
      providers: { type: 'string' },
      rps: { type: 'string' },
      json: { type: 'string' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) { process.stdout.write(USAGE); return }
  const log = values.quiet ? undefined : (line: string): void => { process.stdout.write(`${new Date().toISOString().slice(11, 23)}  ${line}\n`) }
  const report = await runRealRollout({
    registry: values.registry as RealRegistry,
    consumer: values.consumer as RealConsumer,
    mode: values.mode as RolloutMode,
    ...(values.sidecar ? { sidecar: values.sidecar as SidecarKind } : {}),
    ...(values['nacos-version'] ? { nacosVersion: values['nacos-version'] as NacosVersion } : {}),
    ...(values.scale ? { scale: Number(values.scale) } : {}),
    ...(values.providers ? { providers: Number(values.providers) } : {}),
    ...(values.rps ? { rps: Number(values.rps) } : {}),
    ...(log ? { log } : {})
  })
  process.stdout.write(`\n${summaryTable([{ title: `${values.registry}${values.sidecar ? `+${values.sidecar === 'envoy-real' ? 'envoy-real' : 'envoy'}` : ''} × ${values.consumer} / ${values.mode}`, report }])}\n`)
  if (values.json) await writeFile(values.json, JSON.stringify(report, null, 2))
}
