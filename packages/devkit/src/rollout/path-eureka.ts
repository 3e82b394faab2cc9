// Eureka path: the devkit Eureka server with its read-only response cache, and a
// consumer that is @lameduck/balancer over eureka-js-client — three cache hops,
// each scaled from its production default.
import { createBalancer } from '@lameduck/balancer'
import { eurekaDiscovery, eurekaWindows } from '@lameduck/eureka'
import { startEureka } from '../eureka/index.ts'
import type { ResolvedRollout } from './options.ts'
import { LAB_MARGIN_MS, PRODUCTION, plainConsumer, type TrafficPath } from './paths.ts'

export async function eurekaPath (o: ResolvedRollout, service: string): Promise<TrafficPath> {
  const cacheMs = Math.round(PRODUCTION.eurekaResponseCacheMs * o.scale)
  const fetchMs = Math.round(PRODUCTION.eurekaClientFetchMs * o.scale)
  const refreshMs = Math.round(PRODUCTION.balancerRefreshMs * o.scale)
  const heartbeatMs = Math.max(200, Math.round(PRODUCTION.heartbeatMs * o.scale))
  const server = await startEureka({ port: 0, responseCacheUpdateIntervalMs: cacheMs })
  const discovery = eurekaDiscovery({ url: server.url, client: { eureka: { registryFetchInterval: fetchMs } } })
  const plain = plainConsumer(discovery, service)
  const balancer = createBalancer({ service, discovery, refreshIntervalMs: refreshMs, curve: 'linear', consumerId: 'rollout-consumer' })
  // A margin for request latency and timer jitter on a loaded machine.
  const windows = { ...eurekaWindows({ responseCacheUpdateIntervalMs: cacheMs, registryFetchIntervalMs: fetchMs, balancer: refreshMs }), marginMs: LAB_MARGIN_MS }
  return {
    name: 'eureka',
    providerRegistry: { kind: 'eureka', url: server.url, heartbeatMs },
    windows,
    consumer: o.consumer === 'plain' ? plain : { url: (path) => `http://${service}${path}`, dispatcher: balancer },
    describe: { eureka: server.url, responseCacheUpdateIntervalMs: cacheMs, registryFetchIntervalMs: fetchMs, balancerRefreshMs: refreshMs },
    async close () {
      await plain.dispatcher.close()
      await balancer.close()
      await discovery.close()
      await server.close()
    }
  }
}
