import Fastify, { type FastifyInstance } from 'fastify'
import { memoryRegistry, type MemoryRegistry } from '@lameduck/core'
import lameduck, { type LameduckOptions } from '@lameduck/fastify'

export interface Started {
  app: FastifyInstance
  registry: MemoryRegistry
  url: string
  admin: string
}

/** An app with the plugin on 127.0.0.1, admin on a free port, a memory registry and small windows. */
export async function startApp (options: Partial<LameduckOptions> = {}, routes?: (app: FastifyInstance) => void): Promise<Started> {
  const registry = (options.registry as MemoryRegistry | undefined) ?? memoryRegistry()
  // keepAliveTimeout below the windows (as lameduck asks): undici drops an idle connection 1 s after its last response.
  const app = Fastify({ logger: false, keepAliveTimeout: 3_000 })
  await app.register(lameduck, {
    service: 'orders',
    host: '127.0.0.1',
    registry,
    windows: { clientFetchMs: 300 },
    warmupMs: 0,
    signals: false,
    admin: { port: 0 },
    ...options
  })
  app.get('/hello', async () => ({ hello: 'world' }))
  app.get('/slow', async (req) => {
    const ms = Number((req.query as { ms?: string }).ms ?? 500)
    await new Promise((resolve) => setTimeout(resolve, ms))
    return { slept: ms }
  })
  routes?.(app)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, registry, url, admin: app.lameduck.adminUrl! }
}

export { until } from '@lameduck/test-utils'
