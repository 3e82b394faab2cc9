// A grpc-js client on `lameduck://…/orders`: lameduckResolver() resolves through Eureka,
// ramps new instances by their warmup and drops the ones that leave.
//   npm run consumer -w @lameduck/example-grpc     # 20 calls/s, a summary every 2 s
// Env: SCALE, EUREKA_URL, RPS (20), DELAY_MS (50).
import * as grpc from '@grpc/grpc-js'
import { eurekaDiscovery } from '@lameduck/eureka'
import { lameduckResolver } from '@lameduck/grpc/client'
import { clock, OrdersClient, settings, SERVICE } from './orders.ts'

export interface ConsumerStats { ok: number, failed: number, byInstance: Map<string, number>, errors: string[] }

export interface Consumer {
  stats: ConsumerStats
  discovery: ReturnType<typeof eurekaDiscovery>
  stop(): Promise<ConsumerStats>
}

export function startConsumer (o: { eurekaUrl: string, fetchMs: number, rps: number, delayMs: number, summaryMs?: number, print?: (line: string) => void }): Consumer {
  const discovery = eurekaDiscovery({ url: o.eurekaUrl, client: { eureka: { registryFetchInterval: o.fetchMs } } })
  const resolver = lameduckResolver({ discovery, consumerId: 'example-consumer' })
  const client = new OrdersClient(resolver.target(SERVICE), grpc.credentials.createInsecure())
  const stats: ConsumerStats = { ok: 0, failed: 0, byInstance: new Map(), errors: [] }
  const outstanding = new Set<Promise<void>>()
  let seq = 0
  const one = (): Promise<void> => new Promise((resolve) => {
    // Until Eureka has listed the service once, calls wait in the channel (the resolver has not answered yet).
    client.get({ id: String(++seq), delayMs: o.delayMs }, { deadline: Date.now() + 10_000 }, (err, order) => {
      if (err !== null) { stats.failed++; if (stats.errors.length < 20) stats.errors.push(`${grpc.status[err.code]}: ${err.details}`) } else {
        stats.ok++
        stats.byInstance.set(order!.instance, (stats.byInstance.get(order!.instance) ?? 0) + 1)
      }
      resolve()
    })
  })
  const timer = setInterval(() => { const p = one(); outstanding.add(p); p.finally(() => outstanding.delete(p)).catch(() => {}) }, 1_000 / o.rps)
  const summary = o.summaryMs ? setInterval(() => o.print?.(`${clock()}  ok ${stats.ok}, failed ${stats.failed}, by instance ${JSON.stringify(Object.fromEntries(stats.byInstance))}`), o.summaryMs) : null
  return {
    stats,
    discovery,
    async stop () {
      clearInterval(timer)
      if (summary) clearInterval(summary)
      await Promise.all(outstanding)
      client.close()
      resolver.close()
      await discovery.close()
      return stats
    }
  }
}

if (import.meta.main) {
  const s = settings()
  const consumer = startConsumer({ eurekaUrl: s.eurekaUrl, fetchMs: s.fetchMs, rps: Number(process.env.RPS ?? 20), delayMs: Number(process.env.DELAY_MS ?? 50), summaryMs: 2_000, print: console.log })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => { consumer.stop().then(() => process.exit(0), () => process.exit(1)) })
}
