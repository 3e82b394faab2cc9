// Traffic paths of the lab: how consumers find providers. Each path starts what
// it needs (a registry server, a Service proxy) and gives the consumer side.
import { Agent, type Dispatcher } from 'undici'
import { serviceKey, type Discovery, type WindowsInput } from '@lameduck/core'
import type { ResolvedRollout, Transport } from './options.ts'
import type { ProviderConfig } from './provider-process.ts'
import { ServiceProxy } from './service-proxy.ts'
import type { Pod } from './pod.ts'
import { agentOptions, scheme } from './transport.ts'
import { RequestTrace } from './trace.ts'
import type { RequestRecord } from './load.ts'

/** Where the requests come from when not from the lab's own LoadGenerator (e.g. a Java consumer's call log). */
export interface LoadSource {
  /** One record per request, `t` in ms since `start()`, classified like the LoadGenerator's. */
  readonly records: RequestRecord[]
  start(): void | Promise<void>
  /** Stops sending; resolves once every request sent is recorded. */
  stop(): Promise<void>
}

export interface TrafficPath {
  name: string
  /** What providers register with. */
  providerRegistry: ProviderConfig['registry']
  /** The window lameduck providers wait: the scaled inputs, the fixed terms as they are. */
  windows: WindowsInput
  /** Where providers' registry calls go (a sidecar's outbound listener forwards there). */
  registryOrigin?: string
  /** `trace`: the consumer's pools record where each lab request went (RequestTrace.factory). */
  consumer: { url: (path: string) => string, dispatcher: Dispatcher, trace?: RequestTrace }
  /** Called with the ready, non-terminating pods whenever they change (the endpoints controller). */
  onEndpoints?: (pods: Pod[]) => void
  /** Resolves once the consumer side can see `count` providers (else the runner probes through the consumer). */
  discovered?: (count: number) => Promise<void>
  /** Extra facts for the report. */
  describe: Record<string, unknown>
  /** Scenario fields this path overrides in the report (e.g. registry: 'eureka-real', consumer: 'spring'). */
  scenario?: Record<string, unknown>
  /** The path's own load (then `consumer` serves only the discovery probe, unless `discovered` is given). */
  load?: LoadSource
  close(): Promise<void>
}

const SERVICE = 'orders'

/**
 * Fixed delays of the real servers, never scaled: the lab runs them at full length
 * and the window calculator must cover them (there is no blanket lab margin).
 */
export const FIXED = {
  /** PeerEurekaNode's replication batch. */
  eurekaReplicationBatchMs: 500,
  /** Nacos NacosDelayTaskExecuteEngine's push-task check. */
  nacosPushCheckMs: 100,
  /** Nacos DistroConstants.DEFAULT_DATA_SYNC_DELAY_MILLISECONDS. */
  nacosDistroSyncMs: 1_000
}

/** Production defaults (ms) that the lab scales down. */
export const PRODUCTION = {
  eurekaResponseCacheMs: 30_000,
  eurekaClientFetchMs: 30_000,
  balancerRefreshMs: 30_000,
  heartbeatMs: 30_000,
  nacosCacheMs: 10_000,
  nacosPushDelayMs: 500
}

export async function createPath (o: ResolvedRollout): Promise<TrafficPath> {
  if (o.transport === 'grpc') {
    const grpc = await import('./path-grpc.ts')
    return o.registry === 'none' ? grpc.grpcServicePath(o) : o.registry === 'eureka' ? grpc.grpcEurekaPath(o, SERVICE) : grpc.grpcNacosPath(o, SERVICE)
  }
  if (o.registry === 'none') return servicePath(o)
  if (o.registry === 'eureka') return (await import('./path-eureka.ts')).eurekaPath(o, SERVICE)
  return (await import('./path-nacos.ts')).nacosPath(o, SERVICE)
}

/** Kubernetes Service: kube-proxy with endpoint lag and conntrack, a plain keep-alive client. */
async function servicePath (o: ResolvedRollout): Promise<TrafficPath> {
  const proxy = new ServiceProxy(o.endpointLagMs)
  const port = await proxy.listen()
  const trace = new RequestTrace()
  const agent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 60_000, connections: 32, ...agentOptions(o.transport), factory: trace.factory })
  return {
    name: 'kubernetes-service',
    providerRegistry: { kind: 'none' },
    // The endpoint lag is a fixed delay (kube-proxy's), run unscaled.
    windows: { endpointLagMs: o.endpointLagMs },
    consumer: { url: (path) => `${scheme(o.transport)}://127.0.0.1:${port}${path}`, dispatcher: agent, trace },
    onEndpoints: (pods) => proxy.publish(pods.map((p) => ({ id: p.id, port: p.targetPort }))),
    async discovered (count) {
      const deadline = Date.now() + 30_000
      while (proxy.endpoints.length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    },
    describe: { endpointLagMs: o.endpointLagMs, transport: o.transport },
    async close () {
      await agent.close()
      await proxy.close()
    }
  }
}

/**
 * A consumer that knows nothing of lameduck: round robin over the discovery list
 * as it stands, one keep-alive agent, no retries, no reaction to draining headers.
 */
export function plainConsumer (discovery: Discovery, service: string, transport: Transport = 'http', trace = new RequestTrace()): { url: (path: string) => string, dispatcher: Agent, trace: RequestTrace } {
  let next = 0
  return {
    trace,
    dispatcher: new Agent({ keepAliveTimeout: 30_000, connections: 32, ...agentOptions(transport), factory: trace.factory }),
    url (path) {
      const list = discovery.instances(serviceKey(service))
      const target = list[next++ % Math.max(1, list.length)]
      if (target === undefined) throw Object.assign(new Error(`no instance of ${service}`), { code: 'LAMEDUCK_ERR_NO_INSTANCE' })
      return `${scheme(transport)}://${target.host}:${target.port}${path}`
    }
  }
}

export { SERVICE }
