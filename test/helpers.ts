// Shared helpers for the cross-package end-to-end tests.
import Fastify, { type FastifyInstance } from 'fastify'
import lameduck, { type LameduckOptions } from '@lameduck/fastify'
import { until } from '@lameduck/test-utils'

export { until }

/** A provider: Fastify + the plugin on 127.0.0.1 with a free admin port; GET /work answers its id. */
export async function startProvider (id: string, options: Partial<LameduckOptions>): Promise<{ app: FastifyInstance, url: string, admin: string, served: () => number }> {
  const app = Fastify({ logger: false })
  await app.register(lameduck, { service: 'orders', host: '127.0.0.1', warmup: 0, signals: false, admin: { port: 0 }, instanceId: id, ...options })
  let served = 0
  app.all('/work', async (req, reply) => {
    served++
    const ms = Number((req.query as { ms?: string }).ms ?? 0)
    if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms))
    reply.header('x-instance', id)
    return { id }
  })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  await until(() => app.lameduck.state === 'serving', `${id} to serve`)
  return { app, url, admin: app.lameduck.adminUrl!, served: () => served }
}

/** Steady open-loop load: `fire()` every `intervalMs`; counts outcomes. */
export function steadyLoad (fire: () => Promise<string | null>, intervalMs: number) {
  const stats = { ok: 0, failed: 0, errors: [] as string[], byInstance: new Map<string, number>(), lastAt: new Map<string, number>() }
  const pending = new Set<Promise<void>>()
  const timer = setInterval(() => {
    const p = fire().then((instance) => {
      stats.ok++
      if (instance !== null) {
        stats.byInstance.set(instance, (stats.byInstance.get(instance) ?? 0) + 1)
        stats.lastAt.set(instance, Date.now())
      }
    }, (err: Error & { code?: string }) => { stats.failed++; stats.errors.push(err.code ?? err.message) })
    pending.add(p)
    p.finally(() => pending.delete(p)).catch(() => {})
  }, intervalMs)
  // A test that fails before stop() must not be kept alive by its load (a file that never exits).
  timer.unref()
  return {
    stats,
    async stop () { clearInterval(timer); await Promise.all(pending) }
  }
}
