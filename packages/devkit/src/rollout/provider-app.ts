// A provider "container" for the rollout lab, run as a real child process.
// mode 'lameduck': the Fastify plugin does registration, drain and signals.
// mode 'naive' / 'sleep': what services do today — register at listen, and on
// SIGTERM deregister and close at once (Fastify answers 503 while closing).
// Events go to stdout as JSON lines: {"event":"listening",...}, {"event":"state",...}.
import { monitorEventLoopDelay } from 'node:perf_hooks'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Registry, WindowsInput } from '@lameduck/core'
import lameduck from '@lameduck/fastify'
import { fastifyServerOptions, type ServeSpec } from './transport.ts'

export interface ProviderConfig {
  id: string
  version: string
  mode: 'naive' | 'sleep' | 'lameduck'
  service: string
  registry: { kind: 'eureka', url: string, heartbeatMs: number } | { kind: 'nacos', serverList: string } | { kind: 'none' }
  windows: WindowsInput
  warmupMs: number
  maxRequestMs: number
  /** Port to advertise (the sidecar's listener when there is one). */
  advertisePort?: number
  /** A listening socket inherited from the pod at this fd (the sidecar's upstream). Default: listen on any free port. */
  listenFd?: number
  /** The Envoy sidecar's admin, and the scaled waits of the drain step. */
  sidecar?: { envoyAdmin: string, unavailableWaitMs: number, drainTimeoutMs: number, idleQuietMs: number }
  /** Transport and TLS material. Default plain HTTP/1.1. */
  serve?: ServeSpec
  /** Simulated boot: ms before the app is ready (readiness fails until then). */
  bootMs: number
  shutdownTimeoutMs?: number
  /** Misbehave: ignore SIGTERM entirely (the lab checks the SIGKILL at the grace period). */
  ignoreSigterm?: boolean
}

/** The providers' keep-alive timeout (see the app below). */
const KEEP_ALIVE_MS = 3_000

const config = JSON.parse(process.argv[2] ?? '{}') as ProviderConfig
const emit = (event: Record<string, unknown>): void => { process.stdout.write(JSON.stringify({ t: Date.now(), id: config.id, ...event }) + '\n') }

// Event-loop lag of this process, reported every 500 ms: a starved CPU shows here
// (timers fire late), so the report can say how late instead of hiding it in slack.
const lag = monitorEventLoopDelay({ resolution: 10 })
lag.enable()
setInterval(() => {
  emit({ event: 'lag', p99Ms: Math.round(lag.percentile(99) / 1e6), maxMs: Math.round(lag.max / 1e6) })
  lag.reset()
}, 500).unref()

async function makeRegistry (): Promise<Registry | undefined> {
  const r = config.registry
  if (r.kind === 'eureka') {
    const { eurekaRegistry } = await import('@lameduck/eureka')
    return eurekaRegistry({ url: r.url, client: { eureka: { heartbeatInterval: r.heartbeatMs, registryFetchInterval: r.heartbeatMs } } } as never) as unknown as Registry
  }
  if (r.kind === 'nacos') {
    const { nacosRegistry } = await import('@lameduck/nacos')
    return nacosRegistry({ serverList: r.serverList } as never) as unknown as Registry
  }
  return undefined
}

const registry = await makeRegistry()
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
