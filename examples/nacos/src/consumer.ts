// A consumer of `orders`: @lameduck/balancer over Nacos discovery. It prints,
// once a second, which instance answered how many requests and every failure,
// and each change of the Nacos list the moment this process learns of it.
//   npm run consumer -w @lameduck/example-nacos
//   PLAIN=1 npm run consumer -w @lameduck/example-nacos   # a consumer that knows nothing of lameduck
// Env: SCALE (0.5), NACOS_SERVER (127.0.0.1:8848), RPS (20), PLAIN.
import { Agent, type Dispatcher } from 'undici'
import { createBalancer } from '@lameduck/balancer'
import { nacosDiscovery, type NacosDiscovery } from '@lameduck/nacos'
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
   * A consumer that knows nothing of lameduck: round robin over the Nacos
   * client's current list, ignoring `x-lameduck-state`. It routes to a leaving
   * instance until a push (or, when pushes are lost, a poll) tells it. Default false.
   */
  plain?: boolean
}

export interface Consumer {
  discovery: NacosDiscovery
  dispatcher: Dispatcher
  stats: TrafficStats
  /** Stops sending, waits for answers, closes the balancer and the discovery. */
  stop(): Promise<TrafficStats>
}

const addresses = (list: Array<{ host: string, port: number }>): string => list.map((i) => `${i.host}:${i.port}`).join(', ') || 'none'

export async function startConsumer (options: ConsumerOptions): Promise<Consumer> {
  const s = options.settings
  const print = options.print ?? console.log
  // Subscribes: the server pushes changes by UDP; the client also polls every cacheMillis.
  const discovery = nacosDiscovery({ serverList: s.serverList })
  await discovery.load(SERVICE)
  if ((options.waitForInstance ?? true) && discovery.instances(SERVICE).length === 0) {
    print(`${clock()}  consumer: waiting for ${SERVICE} to appear in Nacos…`)
    while (discovery.instances(SERVICE).length === 0) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  print(`${clock()}  nacos: ${SERVICE} = ${addresses(discovery.instances(SERVICE))}`)
  discovery.subscribe(SERVICE, (list) => print(`${clock()}  nacos: ${SERVICE} = ${addresses(list)}`))
  // A Node consumer has no Ribbon hop: the balancer follows the client's change
  // events at once (refresh 0), and drops an instance the moment it answers
  // `x-lameduck-state: draining`.
  const route = options.plain === true
    ? plainRoundRobin(discovery)
    : { url: `http://${SERVICE}/hello`, dispatcher: createBalancer({ service: SERVICE, discovery, refreshIntervalMs: 0 }) }
  const traffic = startTraffic({
    url: route.url,
    dispatcher: route.dispatcher,
    intervalMs: 1_000 / (options.rps ?? 20),
    print,
    clock,
    leavingNote: options.plain === true ? ' (a plain consumer keeps sending until Nacos tells it)' : ': the balancer stops picking it',
    ...(options.summaryMs !== undefined ? { summaryMs: options.summaryMs } : {})
  })
  return {
    discovery,
    dispatcher: route.dispatcher,
    stats: traffic.stats,
    async stop () {
      const stats = await traffic.stop()
      await route.dispatcher.close()
      await discovery.close()
      return stats
    }
  }
}

/** Round robin over the Nacos client's list as it is at each request; a keep-alive Agent. */
function plainRoundRobin (discovery: NacosDiscovery) {
  let next = 0
  return {
    url: (): string => {
      const list = discovery.instances(SERVICE)
      const target = list[next++ % Math.max(list.length, 1)]
      if (target === undefined) throw Object.assign(new Error(`no instance of ${SERVICE} in the list`), { code: 'NO_INSTANCE' })
      return `http://${target.host}:${target.port}/hello`
    },
    dispatcher: new Agent({ keepAliveTimeout: 30_000 })
  }
}

if (import.meta.main) {
  const s = readSettings()
  const plain = process.env.PLAIN === '1' || process.env.PLAIN === 'true'
  console.log(`${clock()}  consumer: nacos ${s.serverList}, polling every ${s.cacheMillis} ms (cacheMillis) besides UDP push (SCALE=${s.scale})` +
    (plain ? '; PLAIN: round robin over the Nacos list, no lameduck balancer' : ''))
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
