// The lab's traffic paths with `--transport grpc`: providers are grpc-js servers
// (grpc-provider.ts) and the load comes from real grpc-js clients.
// - Service: channels on the Service address (pick_first on one connection each,
//   which kube-proxy pins to one pod until it goes away), as most gRPC clients in a
//   cluster call a ClusterIP Service.
// - Eureka: the devkit Eureka server as eurekaPath() runs it; the consumer is a
//   channel on a `lameduck://` target (@lameduck/grpc/client's lameduckResolver over
//   eurekaDiscovery) or, 'plain', one channel per address picked round robin from
//   the discovery list as it stands.
// - Nacos: the same with the devkit Nacos server(s) and nacosDiscovery.
import * as grpc from '@grpc/grpc-js'
import { Agent } from 'undici'
import { serviceKey, type Discovery } from '@lameduck/core'
import { eurekaDiscovery } from '@lameduck/eureka'
import { GrpcLoad } from './grpc-load.ts'
import { WorkClient, type WorkChannel } from './grpc-work.ts'
import type { ResolvedRollout } from './options.ts'
import type { TrafficPath } from './paths.ts'
import { ServiceProxy } from './service-proxy.ts'

/** Channels the Service consumer spreads its calls over (each its own connection, so pods share the load). */
const SERVICE_CHANNELS = 4
const insecure = grpc.credentials.createInsecure()

async function until (check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
}

/** The TrafficPath's HTTP consumer is unused here (the path brings its load and its discovery wait). */
function noHttpConsumer (): { consumer: TrafficPath['consumer'], agent: Agent } {
  const agent = new Agent()
  return { agent, consumer: { url: () => { throw new Error('the gRPC lab has no HTTP consumer') }, dispatcher: agent } }
}

export async function grpcServicePath (o: ResolvedRollout): Promise<TrafficPath> {
  const proxy = new ServiceProxy(o.endpointLagMs)
  const port = await proxy.listen()
  const channels = Array.from({ length: SERVICE_CHANNELS }, () => new WorkClient(`ipv4:127.0.0.1:${port}`, insecure, { 'grpc.use_local_subchannel_pool': 1 }))
  let next = 0
  const { consumer, agent } = noHttpConsumer()
  return {
    name: 'kubernetes-service',
    providerRegistry: { kind: 'none' },
    windows: { endpointLagMs: o.endpointLagMs },
    consumer,
    onEndpoints: (pods) => proxy.publish(pods.map((p) => ({ id: p.id, port: p.targetPort }))),
    discovered: (count) => until(() => proxy.endpoints.length >= count),
    load: new GrpcLoad({ client: () => channels[next++ % channels.length]!, rps: o.rps, slowShare: o.slowShare }),
    describe: { endpointLagMs: o.endpointLagMs, transport: 'grpc', consumer: `grpc-js, ${SERVICE_CHANNELS} channels on the Service address (pick_first)` },
    scenario: { consumer: 'grpc-js' },
    async close () {
      for (const c of channels) c.close()
      await agent.close()
      await proxy.close()
    }
  }
}

/** Round robin over the discovery list as it stands, one channel per address, no reaction to anything else. */
function plainGrpcConsumer (discovery: Discovery, service: string): { pick: () => WorkChannel, close: () => void } {
  const channels = new Map<string, WorkChannel>()
  let next = 0
  return {
    pick () {
      const list = discovery.instances(serviceKey(service))
      const target = list[next++ % Math.max(1, list.length)]
      if (target === undefined) throw Object.assign(new Error(`no instance of ${service}`), { code: 'LAMEDUCK_ERR_NO_INSTANCE' })
      const address = `${target.host}:${target.port}`
      let channel = channels.get(address)
      if (channel === undefined) channels.set(address, channel = new WorkClient(`ipv4:${address}`, insecure))
      return channel
    },
    close () { for (const c of channels.values()) c.close() }
  }
}

/** A registry path's servers and window, with gRPC consumers over `discovery` in place of its HTTP ones. */
async function withGrpcConsumers (o: ResolvedRollout, service: string, base: TrafficPath, discovery: Discovery & { close(): Promise<void> }, refreshMs: number): Promise<TrafficPath> {
  const resolver = o.consumer === 'plain' ? null : (await import('@lameduck/grpc/client')).lameduckResolver({ discovery, refreshIntervalMs: refreshMs, consumerId: 'rollout-consumer', curve: 'linear' })
  const aware = resolver === null ? null : new WorkClient(resolver.target(service), insecure)
  const plain = plainGrpcConsumer(discovery, service)
  return {
    ...base,
    discovered: (count) => until(() => discovery.instances(serviceKey(service)).length >= count),
    load: new GrpcLoad({ client: aware === null ? plain.pick : () => aware, rps: o.rps, slowShare: o.slowShare }),
    describe: { ...base.describe, transport: 'grpc', consumer: resolver === null ? 'grpc-js, a channel per address, round robin over the registry list' : 'grpc-js on lameduck:// (lameduckResolver over the registry discovery)' },
    scenario: { consumer: resolver === null ? 'grpc-plain' : 'grpc-lameduck' },
    async close () {
      aware?.close()
      plain.close()
      resolver?.close()
      await discovery.close()
      await base.close()
    }
  }
}

export async function grpcEurekaPath (o: ResolvedRollout, service: string): Promise<TrafficPath> {
  const { eurekaPath } = await import('./path-eureka.ts')
  // The same Eureka server(s), caches and window as the HTTP lab; its HTTP consumers stay unused.
  const base = await eurekaPath(o, service)
  const readFrom = (base.describe.eureka as string[]).at(-1)!
  const discovery = eurekaDiscovery({ url: readFrom, client: { eureka: { registryFetchInterval: base.describe.registryFetchIntervalMs as number } } })
  return withGrpcConsumers(o, service, base, discovery, base.describe.balancerRefreshMs as number)
}

export async function grpcNacosPath (o: ResolvedRollout, service: string): Promise<TrafficPath> {
  const { nacosPath } = await import('./path-nacos.ts')
  const { nacosDiscovery } = await import('@lameduck/nacos')
  // The same Nacos node(s), push, polling and window as the HTTP lab; its HTTP consumers stay unused.
  const base = await nacosPath(o, service)
  const serverList = (base.describe.nacos as string[]).map((url) => new URL(url).host).join(',')
  return withGrpcConsumers(o, service, base, nacosDiscovery({ serverList }), base.describe.cacheMillis as number)
}
