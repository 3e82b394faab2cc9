// A plain node:http service registered in Eureka, drained by @lameduck/node.
//   npm start -w @lameduck/example-node-http          # :3000, admin 127.0.0.1:54199
//   curl -s 'localhost:54199/offline?wait=true'       # what `lameduck prestop` does
// Env: PORT (3000), ADMIN_PORT (54199), HOST (127.0.0.1), EUREKA_URL
// (http://127.0.0.1:8761/eureka), WINDOW_MS (the 'eureka-node' 60 s window when unset).
import { createServer } from 'node:http'
import { attach } from '@lameduck/node'
import { eurekaRegistry } from '@lameduck/eureka'

const host = process.env.HOST || '127.0.0.1'
const windowMs = Number(process.env.WINDOW_MS || 0)

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url?.split('?')[0] === '/hello') {
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ hello: 'world', state: lameduck.state }))
    return
  }
  res.statusCode = 404
  res.end()
})

// The probe routes (/health/ready, /health/live) are answered by the engine before this handler runs.
const lameduck = await attach(server, {
  service: 'orders',
  host,
  registry: eurekaRegistry({ url: process.env.EUREKA_URL || 'http://127.0.0.1:8761/eureka' }),
  readiness: [async () => true], // e.g. async () => db.ping(): nothing is registered before it passes
  // Eureka server cache + eureka-js-client fetch, 30 s each; WINDOW_MS shortens it for a local run.
  windows: windowMs > 0 ? { clientFetchMs: windowMs } : 'eureka-node',
  maxRequestMs: 5_000,
  admin: { port: Number(process.env.ADMIN_PORT ?? 54199) }
})

// lameduck's own log (stderr, readable; LAMEDUCK_LOG=json for JSON lines) says every transition: no need to print them here.
server.listen(Number(process.env.PORT ?? 3000), host, () => {
  const { port } = server.address() as { port: number }
  console.log(`listening on http://${host}:${port}, admin ${lameduck.adminUrl}`)
})
