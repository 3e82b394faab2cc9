// An Express 5 service registered in Eureka, drained by @lameduck/node.
//   npm start -w @lameduck/example-express            # :3000, admin 127.0.0.1:54199
//   curl -s 'localhost:54199/offline?wait=true'       # what `lameduck prestop` does
// Env: PORT (3000), ADMIN_PORT (54199), HOST (127.0.0.1), EUREKA_URL
// (http://127.0.0.1:8761/eureka), WINDOW_MS (the 'eureka-ribbon' 90 s window when unset).
import { createServer } from 'node:http'
import express from 'express'
import { attach } from '@lameduck/node'
import { eurekaRegistry } from '@lameduck/eureka'

const host = process.env.HOST || '127.0.0.1'
const windowMs = Number(process.env.WINDOW_MS || 0)

const app = express()
const server = createServer(app)

const lameduck = await attach(server, {
  service: 'orders',
  host,
  registry: eurekaRegistry({ url: process.env.EUREKA_URL || 'http://127.0.0.1:8761/eureka' }),
  readiness: [async () => true], // e.g. async () => db.ping(): nothing is registered before it passes
  // Eureka server cache + client fetch + Ribbon refresh, 30 s each; WINDOW_MS shortens it for a local run.
  windows: windowMs > 0 ? { clientFetchMs: windowMs } : 'eureka-ribbon',
  maxRequestMs: 5_000,
  admin: { port: Number(process.env.ADMIN_PORT ?? 54199) }
})

// GET /hello?ms=N answers after N ms (to watch the in-flight wait at the end of a drain).
app.get('/hello', async (req, res) => {
  const ms = Math.min(Number(req.query.ms ?? 0) || 0, 5_000)
  if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms))
  res.json({ hello: 'world', state: lameduck.state })
})

// lameduck's own log (stderr, readable; LAMEDUCK_LOG=json for JSON lines) says every transition: no need to print them here.
server.listen(Number(process.env.PORT ?? 3000), host, () => {
  const { port } = server.address() as { port: number }
  console.log(`listening on http://${host}:${port}, admin ${lameduck.adminUrl}`)
})
