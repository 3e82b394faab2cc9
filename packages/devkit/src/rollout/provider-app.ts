// A provider "container" for the rollout lab, run as a real child process.
// mode 'lameduck': the Fastify plugin does registration, drain and signals.
// mode 'naive' / 'sleep': what services do today — register at listen, and on
// SIGTERM deregister and close at once (Fastify answers 503 while closing).
// Events go to stdout as JSON lines: {"event":"listening",...}, {"event":"state",...}.
import Fastify, { type FastifyInstance } from 'fastify'
import lameduck from '@lameduck/fastify'
import { fastifyServerOptions } from './transport.ts'
import { providerProcess, providerRegistry } from './provider-process.ts'

/** The providers' keep-alive timeout (see the app below). */
const KEEP_ALIVE_MS = 3_000

const { config, emit } = providerProcess()

const registry = await providerRegistry(config)
const bootedAt = Date.now() + config.bootMs
// One app for every transport; its type is the HTTP/1.1 one (the handlers use nothing transport-specific).
// A cleartext HTTP/2 server has no closeIdleConnections(), which forceCloseConnections 'idle' needs.
const serve = config.serve ?? { transport: 'http' }
// keepAliveTimeout below every window the lab runs (≥ 1 s): the Keep-Alive hint (timeout=3) makes
// undici drop an idle connection after 1 s by itself, so no idle connection outlives the window and
// the server never has to close one under a client (Fastify's own 72 s would; attach() warns of it).
// Behind the lab's sidecar the only client is its Envoy, which keeps idle upstream connections: a
// short keepAliveTimeout would close one as Envoy reuses it (503 UC, seen under load), so none.
const app = Fastify({ logger: false, keepAliveTimeout: config.sidecar ? 0 : KEEP_ALIVE_MS, ...(serve.transport === 'h2c' ? {} : { forceCloseConnections: 'idle' }), ...fastifyServerOptions(serve) } as never) as unknown as FastifyInstance
let served = 0

if (config.mode === 'lameduck') {
  await app.register(lameduck, {
    service: config.service,
    host: '127.0.0.1',
    ...(config.advertisePort ? { port: config.advertisePort } : {}),
    instanceId: config.id,
    registry,
    readiness: [() => Date.now() >= bootedAt],
    readinessTimeoutMs: 60_000,
    warmup: config.warmupMs,
    windows: config.windows,
    maxRequestMs: config.maxRequestMs,
    admin: { port: 0 },
    ...(config.ignoreSigterm ? { signals: false as const } : {}),
    ...(config.sidecar ? { sidecar: { envoyAdmin: config.sidecar.envoyAdmin, readyTimeoutMs: 30_000, drainTimeoutMs: config.sidecar.drainTimeoutMs, unavailableWaitMs: config.sidecar.unavailableWaitMs, idleQuietMs: config.sidecar.idleQuietMs, checkIntervalMs: 100 } } : {}),
    ...(config.shutdownTimeoutMs ? { shutdownTimeoutMs: config.shutdownTimeoutMs } : {})
  })
  app.lameduck.on('state', (c) => emit({ event: 'state', from: c.from, to: c.to, reason: c.reason }))
  app.lameduck.on('offline', (r) => emit({ event: 'offline', report: r }))
} else {
  app.get('/health/ready', async (_req, reply) => Date.now() >= bootedAt ? { ok: true } : reply.code(503).send({ ok: false }))
}

app.get('/work', async (req, reply) => {
  served++
  const ms = Number((req.query as { ms?: string }).ms ?? 0)
  if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms))
  reply.header('x-instance', config.id)
  return { id: config.id, version: config.version }
})

const url = await app.listen(config.listenFd !== undefined ? { host: '127.0.0.1', fd: config.listenFd } as { host: string, port?: number } : { host: '127.0.0.1', port: 0 })
const port = (app.server.address() as { port: number }).port
emit({ event: 'listening', url, port, admin: config.mode === 'lameduck' ? app.lameduck.adminUrl : null })

if (config.ignoreSigterm) process.on('SIGTERM', () => emit({ event: 'ignored', signal: 'SIGTERM' }))

if (config.mode !== 'lameduck') {
  // Register once "booted", the way a typical registry client does at startup.
  const instance = { id: config.id, service: config.service, host: '127.0.0.1', port: config.advertisePort ?? port, status: 'UP' as const, metadata: {} }
  const registerWhenBooted = async (): Promise<void> => {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, bootedAt - Date.now())))
    if (registry) await registry.register(instance)
    emit({ event: 'state', to: 'serving' })
  }
  registerWhenBooted().catch((err: Error) => emit({ event: 'error', message: err.message }))
  if (!config.ignoreSigterm) {
    process.once('SIGTERM', () => {
      emit({ event: 'state', to: 'closing', reason: 'SIGTERM' })
      const stop = async (): Promise<void> => {
        if (registry) { await registry.deregister(instance).catch(() => {}); await registry.close().catch(() => {}) }
        await app.close()
      }
      stop().finally(() => { emit({ event: 'exit', served }); process.exit(0) })
    })
  }
}
