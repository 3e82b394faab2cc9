// A consumer of `orders`: @lameduck/balancer over Eureka discovery. It prints,
// once a second, which instance answered how many requests and every failure.
//   npm run consumer -w @lameduck/example-eureka
//   PLAIN=1 npm run consumer -w @lameduck/example-eureka   # a consumer that knows nothing of lameduck
// Env: SCALE (0.1), WINDOWS (eureka-ribbon), EUREKA_URL, RPS (20), PLAIN.
import { Agent, type Dispatcher } from 'undici'
import { createBalancer } from '@lameduck/balancer'
import { eurekaDiscovery, type EurekaDiscovery } from '@lameduck/eureka'
import { clock, readSettings, SERVICE, type Settings } from './settings.ts'
import { startTraffic, type TrafficStats } from '@lameduck/example-shared/traffic'

export interface ConsumerOptions {
  settings: Settings
  /** Requests per second. Default 20. */
  rps?: number
  print?: (line: string) => void
  /** Summary line period; 0 for none. Default 1000 ms. */
  summaryMs?: number
  /** Start sending only once the service has an instance (a consumer started before any provider). Default true. */
  waitForInstance?: boolean
  /**
   * A consumer that knows nothing of lameduck, as most are: round robin over
   * the instance list it re-reads every balancerRefreshMs (a Ribbon-style
   * hop), ignoring `x-lameduck-state`. It keeps routing to a leaving instance
   * until every cache expired, which is what the window is for. Default false.
   */
  plain?: boolean
}

export interface Consumer {
  discovery: EurekaDiscovery
  dispatcher: Dispatcher
  stats: TrafficStats
  /** Stops sending, waits for answers, closes the balancer and the discovery. */
  stop(): Promise<TrafficStats>
}

const addresses = (list: Array<{ host: string, port: number }>): string => list.map((i) => `${i.host}:${i.port}`).join(', ') || 'none'

export async function startConsumer (options: ConsumerOptions): Promise<Consumer> {
  const s = options.settings
  const print = options.print ?? console.log
  // The consumer's own registry fetch: the second cache after Eureka's read-only cache.
  const discovery = eurekaDiscovery({ url: s.eurekaUrl, client: { eureka: { registryFetchInterval: s.registryFetchIntervalMs } } })
  await discovery.ready()
  if ((options.waitForInstance ?? true) && discovery.instances(SERVICE).length === 0) {
    print(`${clock()}  consumer: waiting for ${SERVICE} to appear in Eureka…`)
    while (discovery.instances(SERVICE).length === 0) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  print(`${clock()}  eureka: ${SERVICE} = ${addresses(discovery.instances(SERVICE))}`)
  discovery.subscribe(SERVICE, (list) => print(`${clock()}  eureka: ${SERVICE} = ${addresses(list)}`))
  // The third hop: the balancer's own refresh (Ribbon's ServerListRefreshInterval).
  // The lameduck balancer also follows discovery's change events at once, and drops
  // an instance the moment that instance answers `x-lameduck-state: draining`.
  const route = options.plain === true
    ? plainRoundRobin(discovery, s.balancerRefreshMs)
    : { url: `http://${SERVICE}/hello`, dispatcher: createBalancer({ service: SERVICE, discovery, refreshIntervalMs: s.balancerRefreshMs }), close () {} }
  const traffic = startTraffic({
    url: route.url,
    dispatcher: route.dispatcher,
    intervalMs: 1_000 / (options.rps ?? 20),
    print,
    clock,
    leavingNote: options.plain === true ? ' (a plain consumer keeps sending until its caches expire)' : ': the balancer stops picking it',
    ...(options.summaryMs !== undefined ? { summaryMs: options.summaryMs } : {})
  })
  return {
    discovery,
    dispatcher: route.dispatcher,
    stats: traffic.stats,
    async stop () {
      const stats = await traffic.stop()
      route.close()
      await route.dispatcher.close()
      discovery.close()
      return stats
    }
  }
}

/** Round robin over a copy of the Eureka list taken every refreshMs; a keep-alive Agent. */
function plainRoundRobin (discovery: EurekaDiscovery, refreshMs: number) {
  let list = discovery.instances(SERVICE)
  let next = 0
  const timer = setInterval(() => { list = discovery.instances(SERVICE) }, Math.max(refreshMs, 100))
  return {
    url: (): string => {
      const target = list[next++ % Math.max(list.length, 1)]
      if (target === undefined) throw Object.assign(new Error(`no instance of ${SERVICE} in the list`), { code: 'NO_INSTANCE' })
      return `http://${target.host}:${target.port}/hello`
    },
    dispatcher: new Agent({ keepAliveTimeout: 30_000 }),
    close: () => clearInterval(timer)
  }
}

if (import.meta.main) {
  const s = readSettings()
  console.log(`${clock()}  consumer: ${s.eurekaUrl}, registry fetch every ${s.registryFetchIntervalMs} ms, balancer refresh every ${s.balancerRefreshMs} ms (SCALE=${s.scale})`)
  const plain = process.env.PLAIN === '1' || process.env.PLAIN === 'true'
  if (plain) console.log(`${clock()}  consumer: PLAIN: round robin over the Eureka list, no lameduck balancer`)
  const consumer = await startConsumer({ settings: s, rps: Number(process.env.RPS || 20), plain })
  const stop = async (): Promise<void> => {
    const stats = await consumer.stop()
    const who = [...stats.byInstance].map(([id, n]) => `${id} ${n}`).join(', ')
    console.log(`\n${clock()}  consumer: ${stats.ok + stats.failed} requests, ${stats.failed} failed (${who})`)
    process.exit(stats.failed === 0 ? 0 : 1)
  }
  process.once('SIGINT', () => { stop().catch(console.error) })
  process.once('SIGTERM', () => { stop().catch(console.error) })
}
