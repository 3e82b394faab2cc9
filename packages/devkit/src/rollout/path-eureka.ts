// Eureka path: the devkit Eureka server (or a peer cluster) with its read-only
// response cache, and a consumer over eureka-js-client — plain round robin or
// @lameduck/balancer. The cache hops are scaled from their production defaults;
// the peers' 500 ms replication batch is a fixed delay and runs at full length.
import { createBalancer } from '@lameduck/balancer'
import { eurekaDiscovery, eurekaWindows } from '@lameduck/eureka'
import { startEureka, startEurekaCluster } from '../eureka/index.ts'
import type { ResolvedRollout } from './options.ts'
import { FIXED, PRODUCTION, plainConsumer, type TrafficPath } from './paths.ts'
import { RequestTrace } from './trace.ts'
import { agentOptions, scheme } from './transport.ts'

export async function eurekaPath (o: ResolvedRollout, service: string): Promise<TrafficPath> {
  const cacheMs = Math.round(PRODUCTION.eurekaResponseCacheMs * o.scale)
  const fetchMs = Math.round(PRODUCTION.eurekaClientFetchMs * o.scale)
  const refreshMs = Math.round(PRODUCTION.balancerRefreshMs * o.scale)
  const heartbeatMs = Math.max(200, Math.round(PRODUCTION.heartbeatMs * o.scale))
  const serverOptions = { port: 0, responseCacheUpdateIntervalMs: cacheMs, replicationBatchMs: FIXED.eurekaReplicationBatchMs }
  const cluster = o.cluster > 1 ? await startEurekaCluster({ ...serverOptions, peers: o.cluster }) : null
  const servers = cluster?.servers ?? [await startEureka(serverOptions)]
  // Providers write to the first server; the consumer reads from the last (another peer in a cluster).
  const writeTo = servers[0]!
  const readFrom = servers.at(-1)!
  const discovery = eurekaDiscovery({ url: readFrom.url, client: { eureka: { registryFetchInterval: fetchMs } } })
  const trace = new RequestTrace()
  const plain = plainConsumer(discovery, service, o.transport, trace)
  const balancer = createBalancer({ service, discovery, refreshIntervalMs: refreshMs, curve: 'linear', consumerId: 'rollout-consumer', poolOptions: agentOptions(o.transport), factory: trace.factory })
  const windows = eurekaWindows({
    responseCacheUpdateIntervalMs: cacheMs,
    registryFetchIntervalMs: fetchMs,
    // The plain consumer has no balancer hop: no term for it, so the window carries no slack.
    balancer: o.consumer === 'plain' ? 0 : refreshMs,
    peers: o.cluster,
    replicationBatchMs: FIXED.eurekaReplicationBatchMs
  })
  return {
    name: o.cluster > 1 ? `eureka-cluster-${o.cluster}` : 'eureka',
    providerRegistry: { kind: 'eureka', url: writeTo.url, heartbeatMs },
    registryOrigin: new URL(writeTo.url).origin,
    windows,
    consumer: o.consumer === 'plain' ? plain : { url: (path) => `${scheme(o.transport)}://${service}${path}`, dispatcher: balancer, trace },
    describe: { eureka: servers.map((s) => s.url), responseCacheUpdateIntervalMs: cacheMs, registryFetchIntervalMs: fetchMs, balancerRefreshMs: refreshMs, replicationBatchMs: o.cluster > 1 ? FIXED.eurekaReplicationBatchMs : 0, transport: o.transport },
    async close () {
      await plain.dispatcher.close()
      await balancer.close()
      await discovery.close()
      if (cluster !== null) await cluster.close()
      else await writeTo.close()
    }
  }
}
