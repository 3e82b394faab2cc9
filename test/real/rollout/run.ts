// One rolling update of three lameduck-lab providers on a real registry, under load from the chosen
// consumer: the devkit lab (`runRollout`) with the real-server traffic path plugged in.
import { InvalidOptionError } from '@lameduck/core'
import { runRollout, type RolloutMode, type RolloutReport, type SidecarKind } from '@lameduck/devkit'
import { eurekaRealPath, type RealConsumer } from './path-eureka-real.ts'
import { nacosRealPath } from './path-nacos-real.ts'
import type { NacosVersion } from '../helpers/nacos-modern.ts'

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
  /** nacos-real: the server version. Default '2.3.1'. */
  nacosVersion?: NacosVersion
  /** An Istio-style Envoy sidecar in front of every provider: the devkit stand-in or the real Envoy binary. Default none. */
  sidecar?: SidecarKind
}

export async function runRealRollout (o: RealRolloutOptions): Promise<RolloutReport> {
  if (o.registry !== 'eureka-real' && o.registry !== 'nacos-real') throw new InvalidOptionError('registry', `must be eureka-real or nacos-real, got ${String(o.registry)}`)
  if (!['spring', 'node', 'balancer'].includes(o.consumer)) throw new InvalidOptionError('consumer', `must be spring, node or balancer, got ${String(o.consumer)}`)
  const nacosVersion = o.nacosVersion ?? '2.3.1'
  if (o.registry === 'nacos-real') {
    // The Java consumer of this lab is Spring Cloud's Eureka one; the Nacos Java client is measured in nacos-propagation.test.ts.
    if (o.consumer === 'spring') throw new InvalidOptionError('consumer', 'nacos-real runs with the node or balancer consumer (the spring consumer is a Eureka client; test/real/nacos-propagation.test.ts measures the Java nacos-client)')
    if (nacosVersion !== '2.3.1' && nacosVersion !== '3.1.0') throw new InvalidOptionError('nacosVersion', `must be 2.3.1 or 3.1.0, got ${String(nacosVersion)}`)
  }
  return runRollout({
    registry: o.registry === 'nacos-real' ? 'nacos' : 'eureka',
    mode: o.mode,
    ...(o.sidecar ? { sidecar: o.sidecar } : {}),
    providers: o.providers ?? 3,
    rps: o.rps ?? 200,
    scale: o.scale ?? 0.1,
    // The lab's settle time is scaled too: one full propagation of a new pod at most.
    settleMs: 2_000,
    ...(o.log ? { log: o.log } : {}),
    path: o.registry === 'nacos-real' ? nacosRealPath(o.consumer as 'node' | 'balancer', nacosVersion) : eurekaRealPath(o.consumer)
  })
}
