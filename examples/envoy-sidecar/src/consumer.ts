// A consumer that reaches the pods through their sidecars, the way a Kubernetes
// Service does: readiness-gated endpoints that lag the pods a little, and
// @lameduck/balancer over them. Once a second it prints which pod answered how
// many requests and every failure.
//   npm run consumer -w @lameduck/example-envoy-sidecar
//   PLAIN=1 npm run consumer -w @lameduck/example-envoy-sidecar   # no lameduck balancer
// Env: TARGETS (127.0.0.1:15006,127.0.0.1:15106: pods a and b), SCALE (0.2), RPS (20), PLAIN.
import { Agent, type Dispatcher } from 'undici'
import { createBalancer, staticDiscovery } from '@lameduck/balancer'
import { watchEndpoints, type Endpoints } from './endpoints.ts'
import { clock, podPorts, readSettings, SERVICE, type Settings } from './settings.ts'
import { startTraffic, type TrafficStats } from '@lameduck/example-shared/traffic'

export interface ConsumerOptions {
  /** Each pod's sidecar listener, 'host:port'. */
  targets: string[]
  settings: Settings
  /** Requests per second. Default 20. */
  rps?: number
  print?: (line: string) => void
  /** Summary line period; 0 for none. Default 1000 ms. */
  summaryMs?: number
  /** Endpoint propagation the Service stand-in applies. Default: settings.typicalEndpointLagMs. */
  lagMs?: number
  /**
   * No lameduck balancer: round robin over the ready endpoints with a keep-alive
   * Agent, ignoring `x-lameduck-state`, like a client behind kube-proxy. Default false.
   */
  plain?: boolean
}

export interface Consumer {
  endpoints: Endpoints
  dispatcher: Dispatcher
  stats: TrafficStats
  stop(): Promise<TrafficStats>
}

export async function startConsumer (options: ConsumerOptions): Promise<Consumer> {
  const s = options.settings
  const print = options.print ?? console.log
  const discovery = staticDiscovery({ [SERVICE]: [] })
  let firstReady: () => void
  const ready = new Promise<void>((resolve) => { firstReady = resolve })
  const endpoints = watchEndpoints({
    targets: options.targets,
    path: '/health/ready',
    periodMs: s.readinessPeriodMs,
    lagMs: options.lagMs ?? s.typicalEndpointLagMs,
    onChange: (list) => {
      print(`${clock()}  endpoints: ${SERVICE} = ${list.join(', ') || 'none'}`)
      discovery.set(SERVICE, list)
      if (list.length > 0) firstReady()
    }
  })
  print(`${clock()}  consumer: waiting for a ready endpoint among ${options.targets.join(', ')}…`)
  await ready

  let next = 0
  const route = options.plain === true
    ? {
        url: (): string => {
          const list = endpoints.ready
          const target = list[next++ % Math.max(list.length, 1)]
          if (target === undefined) throw Object.assign(new Error(`no ready endpoint of ${SERVICE}`), { code: 'NO_ENDPOINT' })
          return `http://${target}/hello`
        },
        dispatcher: new Agent({ keepAliveTimeout: 30_000 }) as Dispatcher
      }
    // The balancer follows the endpoint list at once and drops a pod the moment
    // it answers `x-lameduck-state: draining` (Envoy passes the header through).
    : { url: `http://${SERVICE}/hello`, dispatcher: createBalancer({ service: SERVICE, discovery, refreshIntervalMs: 0 }) as Dispatcher }
  const traffic = startTraffic({
    url: route.url,
    dispatcher: route.dispatcher,
    intervalMs: 1_000 / (options.rps ?? 20),
    print,
    clock,
    leavingNote: options.plain === true ? ' (a plain consumer keeps sending until the endpoints change)' : ': the balancer stops picking it',
    ...(options.summaryMs !== undefined ? { summaryMs: options.summaryMs } : {})
  })
  return {
    endpoints,
    dispatcher: route.dispatcher,
    stats: traffic.stats,
    async stop () {
      const stats = await traffic.stop()
      endpoints.close()
      await route.dispatcher.close()
      return stats
    }
  }
}

if (import.meta.main) {
  const s = readSettings()
  const targets = (process.env.TARGETS || ['a', 'b'].map((p) => `127.0.0.1:${podPorts(p).listen}`).join(',')).split(',').map((t) => t.trim()).filter(Boolean)
  const plain = process.env.PLAIN === '1' || process.env.PLAIN === 'true'
  console.log(`${clock()}  consumer: readiness every ${s.readinessPeriodMs} ms, endpoint lag ${s.typicalEndpointLagMs} ms (SCALE=${s.scale})` +
    (plain ? '; PLAIN: round robin, no lameduck balancer' : ''))
  const consumer = await startConsumer({ targets, settings: s, rps: Number(process.env.RPS || 20), plain })
  const stop = async (): Promise<void> => {
    const stats = await consumer.stop()
    const who = [...stats.byInstance].map(([id, n]) => `${id} ${n}`).join(', ')
    console.log(`\n${clock()}  consumer: ${stats.ok + stats.failed} requests, ${stats.failed} failed (${who})`)
    process.exit(stats.failed === 0 ? 0 : 1)
  }
  process.once('SIGINT', () => { stop().catch(console.error) })
  process.once('SIGTERM', () => { stop().catch(console.error) })
}
