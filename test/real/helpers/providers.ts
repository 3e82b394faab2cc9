// A Node provider as users run it: Fastify + @lameduck/fastify + @lameduck/eureka, registering at the
// real Eureka server. Each answers GET /hello with its Eureka instance id in `x-instance`.
import Fastify, { type FastifyInstance } from 'fastify'
import lameduck from '@lameduck/fastify'
import { eurekaRegistry } from '@lameduck/eureka'
import type { Problem, WindowParts } from '@lameduck/core'
import { until } from '@lameduck/test-utils'

export interface ProviderOptions {
  eurekaUrl: string
  heartbeatIntervalMs: number
  leaseDurationSecs: number
  windows: WindowParts
  warmupMs?: number
  weight?: number
  service?: string
  /** The adapter's weightRamp option (a ramping metadata `weight` for weight-only consumers). */
  weightRamp?: boolean | { stepMs?: number }
}

export interface Provider {
  app: FastifyInstance
  id: string
  /** When the registration was last confirmed (204), and the cancel (DELETE answered 200). */
  registeredAt: number
  deregisteredAt: number
  served: number
  close: () => Promise<void>
}

export async function startProvider (o: ProviderOptions): Promise<Provider> {
  const app = Fastify()
  const registry = eurekaRegistry({
    url: o.eurekaUrl,
    leaseDurationSecs: o.leaseDurationSecs,
    client: { eureka: { heartbeatInterval: o.heartbeatIntervalMs } },
    ...(o.weightRamp === undefined ? {} : { weightRamp: o.weightRamp })
  })
  await app.register(lameduck, {
    service: o.service ?? 'orders',
    host: '127.0.0.1',
    registry,
    warmup: o.warmupMs ?? 0,
    weight: o.weight ?? 100,
    windows: o.windows,
    maxRequestMs: 2_000,
    admin: false,
    signals: false,
    routes: false
  })
  const p: Provider = { app, id: '', registeredAt: 0, deregisteredAt: 0, served: 0, close: async () => { await app.close() } }
  app.lameduck.on('registered', (i) => { p.id = i.id; p.registeredAt = Date.now() })
  app.lameduck.on('deregistered', () => { p.deregisteredAt = Date.now() })
  app.get('/hello', async (_req, reply) => {
    p.served++
    reply.header('x-instance', p.id)
    return { instance: p.id }
  })
  let problem = ''
  app.lameduck.on('problem', (pr: Problem) => { problem = `${pr.step}: ${pr.message}` })
  await app.listen({ host: '127.0.0.1', port: 0 })
  // Bounded, with the registry's last complaint: an unbounded wait here turned a slow Eureka into a bare runner timeout.
  await until(() => p.id !== '', `the provider to register at ${o.eurekaUrl}`, { timeoutMs: 60_000, intervalMs: 20 })
    .catch(async (err: Error) => { await app.close(); throw new Error(`${err.message}${problem === '' ? '' : ` (last problem: ${problem})`}`, { cause: err }) })
  return p
}
