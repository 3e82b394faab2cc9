// Nacos path: the devkit Nacos naming server (UDP push + cacheMillis polling) and
// a consumer that is @lameduck/balancer over the nacos naming client.
import { createBalancer } from '@lameduck/balancer'
import { nacosDiscovery, nacosWindows } from '@lameduck/nacos'
import { startNacos } from '../nacos/index.ts'
import type { ResolvedRollout } from './options.ts'
import { LAB_MARGIN_MS, PRODUCTION, plainConsumer, type TrafficPath } from './paths.ts'

export async function nacosPath (o: ResolvedRollout, service: string): Promise<TrafficPath> {
  const cacheMillis = Math.max(100, Math.round(PRODUCTION.nacosCacheMs * o.scale))
  const pushDelayMs = Math.round(PRODUCTION.nacosPushDelayMs * o.scale)
  const server = await startNacos({ port: 0, cacheMillis, pushDelayMs })
  const discovery = nacosDiscovery({ serverList: server.serverList })
  // A Node consumer reads the client's cache on every change: no Ribbon hop.
  const plain = plainConsumer(discovery, service)
  const balancer = createBalancer({ service, discovery, refreshIntervalMs: cacheMillis, curve: 'linear', consumerId: 'rollout-consumer' })
  const windows = { ...nacosWindows({ pushDelayMs, cacheMillis, marginMs: LAB_MARGIN_MS }) }
  return {
    name: 'nacos',
    providerRegistry: { kind: 'nacos', serverList: server.serverList },
    windows,
    consumer: o.consumer === 'plain' ? plain : { url: (path) => `http://${service}${path}`, dispatcher: balancer },
    describe: { nacos: server.url, cacheMillis, pushDelayMs },
    async close () {
      await plain.dispatcher.close()
      await balancer.close()
      await discovery.close()
      await server.close()
    }
  }
}
