// One rolling update of three lameduck-lab providers on a real registry, under load from the chosen
// consumer: the devkit lab (`runRollout`) with the real-server traffic path plugged in.
import { InvalidOptionError } from '@lameduck/core'
import { runRollout, type RolloutMode, type RolloutReport } from '@lameduck/devkit'
import { eurekaRealPath, type RealConsumer } from './path-eureka-real.ts'

export type RealRegistry = 'eureka-real' | 'nacos-real'

export interface RealRolloutOptions {
  registry: RealRegistry
  consumer: RealConsumer
  mode: RolloutMode
  /** Production periods × scale (the Java client's fetch interval is whole seconds: 0.1 → 3 s). Default 0.1. */
  scale?: number
  providers?: number
  /** Rate of the Node consumers' open-loop load (the Java consumer calls back to back every 5 ms). Default 200. */
  rps?: number
  log?: (line: string) => void
}

export async function runRealRollout (o: RealRolloutOptions): Promise<RolloutReport> {
  if (o.registry !== 'eureka-real' && o.registry !== 'nacos-real') throw new InvalidOptionError('registry', `must be eureka-real or nacos-real, got ${String(o.registry)}`)
  if (!['spring', 'node', 'balancer'].includes(o.consumer)) throw new InvalidOptionError('consumer', `must be spring, node or balancer, got ${String(o.consumer)}`)
  // lameduck providers register through @lameduck/nacos, i.e. the Node nacos SDK, whose DEFAULT_GROUP@@name
  // service names the only Nacos server Maven Central serves here (0.8.0) refuses (docs/fidelity.md).
  if (o.registry === 'nacos-real') throw new InvalidOptionError('registry', 'nacos-real cannot run: the providers register through the Node nacos SDK, which Nacos 0.8.0 (the only server version available) refuses (400 "dom not found"); use eureka-real, and test/real/nacos-propagation.test.ts for the real Nacos → Java path')
  return runRollout({
    registry: 'eureka',
    mode: o.mode,
    providers: o.providers ?? 3,
    rps: o.rps ?? 200,
    scale: o.scale ?? 0.1,
    // The lab's settle time is scaled too: one full propagation of a new pod at most.
    settleMs: 2_000,
    ...(o.log ? { log: o.log } : {}),
    path: eurekaRealPath(o.consumer)
  })
}
