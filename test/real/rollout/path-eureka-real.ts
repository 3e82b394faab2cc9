// The rollout lab's traffic path on the real Netflix Eureka server: providers register there, and the
// consumer is a real Java service (Spring Cloud Eureka client + LoadBalancer), a plain eureka-js-client
// round robin (node), or @lameduck/balancer over eureka-js-client (balancer). Every period is the
// production default × scale, through the server's and clients' own properties.
import { Agent } from 'undici'
import { createBalancer } from '@lameduck/balancer'
import { eurekaDiscovery, eurekaWindows } from '@lameduck/eureka'
import type { ResolvedRollout, TrafficPath } from '@lameduck/devkit'

/**
 * The real server's cache timer is fixed-delay and the clients' fetch timers fire late on a
 * busy 2-core machine: measured up to 461 ms late for one term (docs/fidelity.md, Eureka). The
 * stand-in lab carries no margin; against the real JVMs the window keeps a margin for that
 * measured lateness, in the window's own `marginMs` term, as a production window would.
 */
const TIMER_LATENESS_MARGIN_MS = 1_000
import { startJavaConsumer, startRealEureka, waitFor, type RealEureka } from '../helpers/eureka.ts'
import { javaLoad } from './java-load.ts'
import { roundRobin } from './round-robin.ts'

export type RealConsumer = 'spring' | 'node' | 'balancer'

/** The real periods at a scale: the client fetch is an int of seconds (1 s at least). */
export function realPeriods (scale: number): { cacheMs: number, fetchSeconds: number, lbTtlMs: number, heartbeatMs: number } {
  return {
    cacheMs: Math.round(30_000 * scale),
    fetchSeconds: Math.max(1, Math.round(30 * scale)),
    lbTtlMs: Math.round(35_000 * scale),
    heartbeatMs: Math.max(200, Math.round(30_000 * scale))
  }
}

export function eurekaRealPath (consumer: RealConsumer) {
  return async (o: ResolvedRollout): Promise<TrafficPath> => {
    const p = realPeriods(o.scale)
    const server = await startRealEureka({ responseCacheUpdateIntervalMs: p.cacheMs })
    try {
      const common = {
        name: 'eureka-real',
        providerRegistry: { kind: 'eureka' as const, url: server.eurekaUrl, heartbeatMs: p.heartbeatMs },
        // A sidecar's outbound listener forwards the providers' registry calls here.
        registryOrigin: new URL(server.eurekaUrl).origin,
        scenario: { registry: 'eureka-real', consumer }
      }
      if (consumer === 'spring') return { ...common, ...await springSide(server, p, o.providers) }
      return { ...common, ...nodeSide(server, p, consumer, o.log) }
    } catch (err) {
      await server.stop()
      throw err
    }
  }
}

type Side = Omit<TrafficPath, 'name' | 'providerRegistry' | 'scenario'>

async function springSide (server: RealEureka, p: ReturnType<typeof realPeriods>, providers: number): Promise<Side> {
  const java = await startJavaConsumer({ eurekaUrl: server.eurekaUrl, registryFetchIntervalSeconds: p.fetchSeconds, cacheTtlMs: p.lbTtlMs, target: 'orders', path: '/work', intervalMs: 5 })
  const agent = new Agent()
  return {
    windows: { ...eurekaWindows({ responseCacheUpdateIntervalMs: p.cacheMs, registryFetchIntervalMs: p.fetchSeconds * 1_000, balancer: p.lbTtlMs }), marginMs: TIMER_LATENESS_MARGIN_MS },
    consumer: { url: () => `${java.url}/lab/call`, dispatcher: agent },
    load: javaLoad(java),
    async discovered (count) {
      // Every v1 provider answered a call through the Java consumer's LoadBalancer.
      const seen = new Set<string>()
      await waitFor(async () => {
        const call = await (await fetch(`${java.url}/lab/call`)).json() as { instance: string | null }
        if (call.instance !== null) seen.add(call.instance)
        return seen.size >= count
      }, `the Java consumer to reach ${count} providers`, java, 120_000)
    },
    describe: { eureka: server.eurekaUrl, consumer: 'Spring Cloud Eureka client + LoadBalancer (@LoadBalanced RestClient)', responseCacheUpdateIntervalMs: p.cacheMs, registryFetchIntervalSeconds: p.fetchSeconds, loadBalancerCacheTtlMs: p.lbTtlMs },
    async close () {
      await agent.close()
      await java.stop()
      await server.stop()
    }
  }
}

function nodeSide (server: RealEureka, p: ReturnType<typeof realPeriods>, consumer: 'node' | 'balancer', log: (l: string) => void): Side {
  const fetchMs = p.fetchSeconds * 1_000
  const discovery = eurekaDiscovery({ url: server.eurekaUrl, client: { eureka: { registryFetchInterval: fetchMs } } })
  const agent = new Agent({ keepAliveTimeout: 30_000, connections: 32 })
  const balancer = consumer === 'balancer' ? createBalancer({ service: 'orders', discovery, refreshIntervalMs: fetchMs, curve: 'linear', consumerId: 'rollout-consumer' }) : null
  // node: round robin over eureka-js-client's list as it stands, no retries (what most Node consumers do).
  const plainUrl = roundRobin(discovery, 'orders')
  log(`consumer: ${consumer === 'balancer' ? '@lameduck/balancer over eureka-js-client' : 'eureka-js-client round robin'}, fetch ${fetchMs} ms`)
  return {
    windows: { ...eurekaWindows({ responseCacheUpdateIntervalMs: p.cacheMs, registryFetchIntervalMs: fetchMs, balancer: balancer === null ? 'none' : fetchMs }), marginMs: TIMER_LATENESS_MARGIN_MS },
    consumer: balancer === null ? { url: plainUrl, dispatcher: agent } : { url: (path) => `http://orders${path}`, dispatcher: balancer },
    describe: { eureka: server.eurekaUrl, consumer: consumer === 'balancer' ? '@lameduck/balancer + eureka-js-client' : 'eureka-js-client, round robin', responseCacheUpdateIntervalMs: p.cacheMs, registryFetchIntervalMs: fetchMs },
    async close () {
      await agent.close()
      await balancer?.close()
      await discovery.close()
      await server.stop()
    }
  }
}
