// A Fastify service using @lameduck/fastify with the in-memory registry.
//   npm start -w @lameduck/example-basic
// then, from another terminal, watch the offline sequence:
//   curl -s localhost:54199/status | jq .state
//   curl -s -X POST localhost:54199/offline        # 202 + the window breakdown
//   curl -si localhost:3000/hello                  # still 200, with x-lameduck-state: draining
//   curl -s 'localhost:54199/offline?wait=true'    # blocks until offline, prints the report
//   curl -s -X POST localhost:54199/online         # back to serving
import Fastify from 'fastify'
import { memoryRegistry } from '@lameduck/core'
import lameduck from '@lameduck/fastify'

export async function buildServer (options: { port?: number, adminPort?: number, windowMs?: number } = {}) {
  const app = Fastify({ logger: { level: process.env.LOG_LEVEL ?? (process.env.LAMEDUCK_TEST ? 'warn' : 'info') } })
  // The memory registry stands in for Eureka/Nacos; its delay models their caches.
  const registry = memoryRegistry({ propagationDelayMs: 1_000 })
  await app.register(lameduck, {
    service: 'hello',
    host: '127.0.0.1',
    registry,
    delayMs: 1_000,
    readiness: [async () => true],
    warmupMs: 10_000,
    windows: { clientFetchMs: options.windowMs ?? 5_000 },
    maxRequestMs: 2_000,
    admin: { host: '127.0.0.1', port: options.adminPort ?? 54199 }
  })
  app.get('/hello', async () => ({ hello: 'world', state: app.lameduck.state }))
  app.get('/slow', async () => {
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    return { slow: true }
  })
  await app.listen({ host: '127.0.0.1', port: options.port ?? 3000 })
  return { app, registry }
}

if (import.meta.main) {
  await buildServer({ port: Number(process.env.PORT ?? 3000), adminPort: Number(process.env.ADMIN_PORT ?? 54199) })
}
