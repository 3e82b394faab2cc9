// A Fastify service that registers in Nacos through @lameduck/fastify.
//   npm run provider -w @lameduck/example-nacos                                # :3000, admin 127.0.0.1:54199
//   PORT=3001 ADMIN_PORT=54200 npm run provider -w @lameduck/example-nacos     # a second one beside it
// Take one offline the way a Kubernetes preStop does, and watch the consumer:
//   curl -s 'localhost:54199/offline?wait=true'
// Env: SCALE (0.5), MARGIN_MS (0), NACOS_SERVER (127.0.0.1:8848), HOST (127.0.0.1), BOOT_MS (1000), LOG_LEVEL (warn).
import Fastify from 'fastify'
import lameduck from '@lameduck/fastify'
import { nacosRegistry, nacosWindows } from '@lameduck/nacos'
import { clock, readSettings, SERVICE } from './settings.ts'

const s = readSettings()
const host = process.env.HOST || '127.0.0.1'
const port = Number(process.env.PORT ?? 3000)
const adminPort = Number(process.env.ADMIN_PORT ?? 54199)
const bootedAt = Date.now() + Number(process.env.BOOT_MS ?? 1_000)

const app = Fastify({ logger: { level: process.env.LOG_LEVEL || 'warn' } })
await app.register(lameduck, {
  service: SERVICE,
  host,
  registry: nacosRegistry({ serverList: s.serverList, logger: app.log }),
  // Stands in for db.ping() or a cache warm-up: nothing is registered before it passes.
  readiness: [async () => Date.now() >= bootedAt],
  warmupMs: s.warmupMs,
  // Push delay + poll period (cacheMillis) + margin: 0.5 + 10 + 1 s (the 'nacos'
  // preset), here each times SCALE.
  windows: nacosWindows({ pushDelayMs: s.pushDelayMs, cacheMillis: s.cacheMillis, marginMs: s.marginMs + s.extraMarginMs }),
  maxRequestMs: 5_000,
  admin: { host: '127.0.0.1', port: adminPort }
})

const instanceId = (): string => (app.lameduck.status().instance as { id?: string } | undefined)?.id ?? 'provider'
const say = (line: string): void => console.log(`${clock()}  ${instanceId()}  ${line}`)
app.lameduck.on('state', (c) => say(`${c.from} → ${c.to} (${c.reason})`))
app.lameduck.on('offline', (r) => {
  say(`offline after ${r.totalMs} ms: window ${r.windowMs} ms, ${r.requestsWhileDraining} requests served while draining` +
    (r.problems.length > 0 ? `, problems: ${r.problems.map((p) => p.message).join('; ')}` : ''))
})

// GET /hello?ms=N answers after N ms (to see the in-flight wait at the end of a drain).
app.get('/hello', async (req, reply) => {
  const ms = Number((req.query as { ms?: string }).ms ?? 0)
  if (ms > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(ms, 5_000)))
  reply.header('x-instance', instanceId())
  return { hello: 'world', instance: instanceId(), state: app.lameduck.state }
})

const url = await app.listen({ host, port })
say(`listening on ${url}, admin ${app.lameduck.adminUrl}; window ${app.lameduck.lifecycle.window.totalMs} ms (nacos × SCALE ${s.scale}${s.extraMarginMs > 0 ? ` + ${s.extraMarginMs} ms margin` : ''})`)
