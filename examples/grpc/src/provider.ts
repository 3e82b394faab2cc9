// A grpc-js service registered in Eureka by attachGrpc() from @lameduck/grpc. It serves
// grpc.health.v1 (SERVING only while serving: Kubernetes' `grpc:` readiness probe follows
// the drain), registers once booted and bound, and drains on `lameduck prestop` or SIGTERM.
//   npm run provider -w @lameduck/example-grpc                              # :50051, admin 127.0.0.1:54199
//   PORT=50052 ADMIN_PORT=54200 npm run provider -w @lameduck/example-grpc  # a second one
// Take one offline the way a Kubernetes preStop does:
//   npx lameduck prestop --admin http://127.0.0.1:54199
// Env: SCALE (0.1), MARGIN_MS (0), EUREKA_URL, HOST (127.0.0.1), PORT, ADMIN_PORT, BOOT_MS (1000).
import * as grpc from '@grpc/grpc-js'
import { eurekaRegistry, eurekaWindows } from '@lameduck/eureka'
import { attachGrpc } from '@lameduck/grpc'
import { clock, OrdersService, settings, SERVICE, type GetOrderRequest, type Order } from './orders.ts'

const s = settings()
const host = process.env.HOST || '127.0.0.1'
const port = Number(process.env.PORT ?? 50051)
const adminPort = Number(process.env.ADMIN_PORT ?? 54199)
const bootedAt = Date.now() + Number(process.env.BOOT_MS ?? 1_000)
let instance = 'provider'
const say = (line: string): void => console.log(`${clock()}  ${instance}  ${line}`)

const server = new grpc.Server()
server.addService(OrdersService, {
  get: (call: grpc.ServerUnaryCall<GetOrderRequest, Order>, cb: grpc.sendUnaryData<Order>) => {
    const reply = (): void => cb(null, { id: call.request.id, instance })
    const ms = Math.min(Number(call.request.delayMs) || 0, 5_000)
    if (ms > 0) setTimeout(reply, ms)
    else reply()
  }
})

const lameduck = await attachGrpc(server, {
  service: SERVICE,
  host,
  registry: eurekaRegistry({ url: s.eurekaUrl, client: { eureka: { heartbeatInterval: s.heartbeatMs, registryFetchInterval: s.fetchMs } } }),
  // Stands in for db.ping() or a cache warm-up: nothing is registered (and health says NOT_SERVING) before it passes.
  readiness: [async () => Date.now() >= bootedAt],
  // Eureka's read-only cache + the consumers' fetch (30 + 30 s, × SCALE); the lameduck:// consumer adds no balancer hop.
  windows: eurekaWindows({ responseCacheUpdateIntervalMs: s.cacheMs, registryFetchIntervalMs: s.fetchMs, balancer: 'none', marginMs: s.marginMs }),
  maxRequestMs: 5_000,
  admin: { host: '127.0.0.1', port: adminPort }
})
lameduck.on('state', (c) => say(`${c.from} → ${c.to} (${c.reason})`))
lameduck.on('offline', (r) => say(`offline after ${r.totalMs} ms: window ${r.windowMs} ms, ${r.requestsWhileDraining} calls served while draining`))

const bound = await new Promise<number>((resolve, reject) => server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => err ? reject(err) : resolve(p)))
instance = `${host}:${bound}`
// The admin listener comes up with the lifecycle, once the server is bound.
while (lameduck.adminUrl === null) await new Promise((resolve) => setTimeout(resolve, 10))
say(`listening on ${host}:${bound}, admin ${lameduck.adminUrl}; window ${lameduck.lifecycle.window.totalMs} ms (Eureka × SCALE ${s.scale})`)
