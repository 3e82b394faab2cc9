// Nacos path: the devkit Nacos naming server (or a cluster of nodes), its list
// snapshot refreshed by the push task, UDP push and cacheMillis polling, and a
// consumer over the nacos naming client — plain round robin or @lameduck/balancer.
// The push delay and cacheMillis are scaled; the 100 ms push-task check and the
// 1 s distro sync between nodes are fixed delays and run at full length.
import { createBalancer } from '@lameduck/balancer'
import { nacosDiscovery, nacosWindows } from '@lameduck/nacos'
import { startNacos, startNacosCluster } from '../nacos/index.ts'
import type { ResolvedRollout } from './options.ts'
import { FIXED, PRODUCTION, plainConsumer, type TrafficPath } from './paths.ts'
import { RequestTrace } from './trace.ts'

export async function nacosPath (o: ResolvedRollout, service: string): Promise<TrafficPath> {
  const cacheMillis = Math.max(100, Math.round(PRODUCTION.nacosCacheMs * o.scale))
  const pushDelayMs = Math.round(PRODUCTION.nacosPushDelayMs * o.scale)
  const serverOptions = { port: 0, cacheMillis, pushDelayMs, pushCheckIntervalMs: FIXED.nacosPushCheckMs, push: o.nacosPush }
  const cluster = o.cluster > 1 ? await startNacosCluster({ ...serverOptions, nodes: o.cluster, distroSyncDelayMs: FIXED.nacosDistroSyncMs }) : null
  const nodes = cluster?.nodes ?? [await startNacos(serverOptions)]
  // Providers write to the first node; the consumer's SDK reads every node at random, as with a real serverList.
  const discovery = nacosDiscovery({ serverList: cluster?.serverList ?? nodes[0]!.serverList })
  // A Node consumer reads the client's cache on every change: no Ribbon hop.
  const trace = new RequestTrace()
  const plain = plainConsumer(discovery, service, 'http', trace)
  const balancer = createBalancer({ service, discovery, refreshIntervalMs: cacheMillis, curve: 'linear', consumerId: 'rollout-consumer', factory: trace.factory })
  // marginMs stays nacosWindows' own default: the SDK's fixed 1 s first poll after a subscribe.
  const windows = nacosWindows({ pushDelayMs, pushCheckMs: FIXED.nacosPushCheckMs, cacheMillis, push: o.nacosPush, cluster: o.cluster, distroSyncDelayMs: FIXED.nacosDistroSyncMs })
  return {
    name: `nacos${o.cluster > 1 ? `-cluster-${o.cluster}` : ''}${o.nacosPush ? '' : '-no-push'}`,
    providerRegistry: { kind: 'nacos', serverList: nodes[0]!.serverList },
    windows,
    consumer: o.consumer === 'plain' ? plain : { url: (path) => `http://${service}${path}`, dispatcher: balancer, trace },
    // The fleet is discovered once every node lists it: the SDK reads a random node per
    // poll, and a node the distro sync has not reached yet would answer an empty list
    // (a start-up artefact of the lab, not part of the rolling update it measures).
    async discovered (count) {
      const deadline = Date.now() + 30_000
      while (Date.now() < deadline) {
        const sizes = await Promise.all(nodes.map((n) => listed(n.url, service)))
        if (sizes.every((size) => size >= count)) break
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    },
    describe: { nacos: nodes.map((n) => n.url), cacheMillis, pushDelayMs, pushCheckMs: FIXED.nacosPushCheckMs, push: o.nacosPush, distroSyncDelayMs: o.cluster > 1 ? FIXED.nacosDistroSyncMs : 0 },
    async close () {
      await plain.dispatcher.close()
      await balancer.close()
      await discovery.close()
      if (cluster !== null) await cluster.close()
      else await nodes[0]!.close()
    }
  }
}

/** How many healthy instances a node's v1 list holds for the service (0 on any failure). */
async function listed (nodeUrl: string, service: string): Promise<number> {
  try {
    const res = await fetch(new URL(`/nacos/v1/ns/instance/list?serviceName=${encodeURIComponent(service)}&healthyOnly=true`, nodeUrl))
    const body = await res.json() as { hosts?: unknown[] }
    return Array.isArray(body.hosts) ? body.hosts.length : 0
  } catch {
    return 0
  }
}
