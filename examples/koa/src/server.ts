// A Koa service registered in Nacos, drained by @lameduck/node.
//   npm start -w @lameduck/example-koa                # :3000, admin 127.0.0.1:54199
//   curl -s 'localhost:54199/offline?wait=true'       # what `lameduck prestop` does
// Env: PORT (3000), ADMIN_PORT (54199), HOST (127.0.0.1), NACOS_SERVER
// (127.0.0.1:8848), WINDOW_MS (the 'nacos' 11.5 s window when unset).
import { createServer } from 'node:http'
import Koa from 'koa'
import { attach } from '@lameduck/node'
import { nacosRegistry } from '@lameduck/nacos'

const host = process.env.HOST || '127.0.0.1'
const windowMs = Number(process.env.WINDOW_MS || 0)

const app = new Koa()
// GET /hello?ms=N answers after N ms (to watch the in-flight wait at the end of a drain).
app.use(async (ctx) => {
  if (ctx.method !== 'GET' || ctx.path !== '/hello') { ctx.status = 404; return }
  const ms = Math.min(Number(ctx.query.ms ?? 0) || 0, 5_000)
  if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms))
  ctx.body = { hello: 'world', state: lameduck.state }
})
// After every app.use(): callback() composes the middleware registered so far, and a later use() is not in it.
const server = createServer(app.callback())

const lameduck = await attach(server, {
  service: 'orders',
  host,
  registry: nacosRegistry({ serverList: process.env.NACOS_SERVER || '127.0.0.1:8848' }),
  readiness: [async () => true], // e.g. async () => db.ping(): nothing is registered before it passes
  // Nacos push delay + client poll (cacheMillis) + margin: 0.5 + 10 + 1 s; WINDOW_MS shortens it for a local run.
  windows: windowMs > 0 ? { clientFetchMs: windowMs } : 'nacos',
  maxRequestMs: 5_000,
  admin: { port: Number(process.env.ADMIN_PORT ?? 54199) }
})

// lameduck's own log (stderr, readable; LAMEDUCK_LOG=json for JSON lines) says every transition: no need to print them here.
server.listen(Number(process.env.PORT ?? 3000), host, () => {
  const { port } = server.address() as { port: number }
  console.log(`listening on http://${host}:${port}, admin ${lameduck.adminUrl}`)
})
