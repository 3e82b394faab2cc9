// The rollout lab's traffic path on a real Nacos server (2.3.1 or 3.1.0, helpers/nacos-modern.ts):
// providers register through @lameduck/nacos (the npm SDK's v1 API, UDP push), and the consumer is
// @lameduck/nacos discovery read round robin (node) or @lameduck/balancer over it (balancer). The
// server's periods are its own: the push delay 500 ms (+ the 100 ms task check) and cacheMillis
// 10 s, which 2.x/3.x never hand out lower (the pushCacheMillis switch's floor), so --scale does
// not shorten this path's window.
import { Agent } from 'undici'
import { createBalancer } from '@lameduck/balancer'
import { nacosDiscovery, nacosWindows } from '@lameduck/nacos'
import type { ResolvedRollout, TrafficPath } from '@lameduck/devkit'
import { startModernNacos, type NacosVersion } from '../helpers/nacos-modern.ts'
import { roundRobin } from './round-robin.ts'

const CACHE_MILLIS = 10_000

export function nacosRealPath (consumer: 'node' | 'balancer', version: NacosVersion) {
  return async (o: ResolvedRollout): Promise<TrafficPath> => {
    const server = await startModernNacos(version)
    const discovery = nacosDiscovery({ serverList: server.serverList })
    const agent = new Agent({ keepAliveTimeout: 30_000, connections: 32 })
    const balancer = consumer === 'balancer' ? createBalancer({ service: 'orders', discovery, refreshIntervalMs: CACHE_MILLIS, curve: 'linear', consumerId: 'rollout-consumer' }) : null
    // node: round robin over the discovery's list as it stands, no retries (what most Node consumers do).
    const plainUrl = roundRobin(discovery, 'orders')
    o.log(`nacos-real: Nacos ${version} on ${server.serverList}; consumer ${consumer === 'balancer' ? '@lameduck/balancer over @lameduck/nacos' : '@lameduck/nacos round robin'}`)
    return {
      name: `nacos-real-${version}`,
      providerRegistry: { kind: 'nacos', serverList: server.serverList },
      windows: nacosWindows({ cacheMillis: CACHE_MILLIS }),
      consumer: balancer === null ? { url: plainUrl, dispatcher: agent } : { url: (path) => `http://orders${path}`, dispatcher: balancer },
      async discovered (count) {
        const deadline = Date.now() + 60_000
        while (discovery.instances('orders').length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
      },
      describe: { nacos: server.serverList, version, cacheMillis: CACHE_MILLIS, pushDelayMs: 500 },
      scenario: { registry: 'nacos-real', consumer, nacosVersion: version },
      async close () {
        await agent.close()
        await balancer?.close()
        await discovery.close()
        await server.close()
      }
    }
  }
}
