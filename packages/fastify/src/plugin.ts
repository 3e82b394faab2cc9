import type { Socket } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ConsumerTracker, Lifecycle, type DrainStep, type OfflineReport, type StartupStep } from '@lameduck/core'
import { startAdmin, type AdminServer } from './admin.ts'
import { defaultHost } from './host.ts'
import { resolveOptions, type LameduckOptions, type ResolvedOptions } from './options.ts'
import { installSignals } from './signals.ts'
import { sidecarSteps } from './sidecar.ts'

export const CONSUMER_HEADER = 'x-lameduck-consumer'
export const STATE_HEADER = 'x-lameduck-state'

/** What `app.lameduck` exposes. */
export interface LameduckDecorator {
  readonly state: Lifecycle['state']
  readonly warming: boolean
  /** The admin listener's URL, or null when disabled. */
  readonly adminUrl: string | null
  readonly lifecycle: Lifecycle
  /** Starts (or joins) the offline sequence. */
  offline(options?: { reason?: string }): Promise<OfflineReport>
  /** Goes online again from draining or offline. */
  online(): Promise<void>
  /** The signal path without a signal: offline sequence, then app.close(). */
  shutdown(reason?: string): Promise<void>
  status(): Record<string, unknown>
  on: Lifecycle['on']
  off: Lifecycle['off']
}

declare module 'fastify' {
  interface FastifyInstance { lameduck: LameduckDecorator }
  interface FastifyContextConfig { lameduck?: { track?: boolean } }
}

const DRAINING_STATES = new Set(['draining', 'offline', 'closing', 'stopped'])

export async function lameduckPlugin (app: FastifyInstance, input: LameduckOptions): Promise<void> {
  const options = resolveOptions(input, input?.registry?.windows)
  const log = app.log
  const steps: { beforeRegister: StartupStep[], afterWindow: DrainStep[] } = options.sidecar === false ? { beforeRegister: [], afterWindow: [] } : sidecarSteps(options.sidecar, log)

  const lifecycle = new Lifecycle({
    registry: options.registry,
    windows: options.window,
    delayMs: options.delay,
    readiness: options.readiness,
    readinessTimeoutMs: options.readinessTimeoutMs,
    warmupMs: options.warmup,
    weight: options.weight,
    maxRequestMs: options.maxRequestMs,
    beforeRegister: steps.beforeRegister,
    afterWindow: steps.afterWindow,
    logger: log
  })
  const tracker = options.earlyOffline === false
    ? undefined
    : new ConsumerTracker({ windowMs: options.window.totalMs, quietMs: options.earlyOffline.quietMs, inflight: lifecycle.inflight })
  if (tracker !== undefined) (lifecycle.options as { earlyOffline?: ConsumerTracker }).earlyOffline = tracker

  if (options.window.totalMs + options.maxRequestMs > options.shutdownTimeoutMs) {
    log.warn({ lameduck: { windowMs: options.window.totalMs, maxRequestMs: options.maxRequestMs, shutdownTimeoutMs: options.shutdownTimeoutMs } },
      'lameduck: window + maxRequestMs exceeds shutdownTimeoutMs: a slow request at the end of a drain would be cut')
  }

  // Connection bookkeeping for drain: close idle keep-alive sockets when draining starts, count closes.
  const sockets = new Set<Socket>()
  let closedWhileDraining = 0
  const connections = () => ({ open: sockets.size, closedWhileDraining })
  function trackSocket (socket: Socket): void {
    sockets.add(socket)
    socket.once('close', () => {
      sockets.delete(socket)
      if (DRAINING_STATES.has(lifecycle.state)) closedWhileDraining++
    })
  }

  let broken: Error | null = null
  lifecycle.on('state', (change) => {
    if (change.to === 'draining') {
      // Keep-alive clients waiting on an idle socket would otherwise hold on to
      // this instance past the window; every later response also says close.
      app.server.closeIdleConnections?.()
    }
  })

  const inflight = lifecycle.inflight
  const endRequest = (): void => inflight.end()
  app.addHook('onRequest', function lameduckOnRequest (req: FastifyRequest, reply: FastifyReply, done) {
    inflight.start()
    reply.raw.once('close', endRequest)
    if (tracker !== undefined && req.routeOptions.config.lameduck?.track !== false) {
      const consumer = req.headers[CONSUMER_HEADER]
      tracker.seen(typeof consumer === 'string' ? consumer : undefined)
    }
    done()
  })
  app.addHook('onSend', function lameduckOnSend (req: FastifyRequest, reply: FastifyReply, payload: unknown, done) {
    const state = lifecycle.state
    if (DRAINING_STATES.has(state)) {
      reply.header('connection', 'close')
      reply.header(STATE_HEADER, state)
      if (tracker !== undefined) {
        const consumer = req.headers[CONSUMER_HEADER]
        tracker.told(typeof consumer === 'string' ? consumer : undefined)
      }
    }
    done(null, payload)
  })

  if (options.routes !== false) {
    const untracked = { lameduck: { track: false } }
    app.get(options.routes.ready, { config: untracked, logLevel: 'warn' }, async function lameduckReady (_req, reply) {
      const state = lifecycle.state
      if (state === 'serving') return { state, warming: lifecycle.warming }
      return reply.code(503).send({ state })
    })
    app.get(options.routes.live, { config: untracked, logLevel: 'warn' }, async function lameduckLive (_req, reply) {
      if (broken !== null) return reply.code(503).send({ state: lifecycle.state, error: broken.message })
      return { state: lifecycle.state }
    })
  }

  let admin: AdminServer | null = null
  if (options.admin !== false) {
    admin = await startAdmin({
      ...options.admin,
      lifecycle,
      logger: log,
      connections,
      extraStatus: () => ({ earlyOffline: tracker?.describe() ?? null, broken: broken?.message ?? null, shutdownTimeoutMs: options.shutdownTimeoutMs })
    })
  }

  const uninstallSignals = installSignals({ app, lifecycle, signals: options.signals, shutdownTimeoutMs: options.shutdownTimeoutMs, connections, sockets })

  app.decorate('lameduck', {
    get state () { return lifecycle.state },
    get warming () { return lifecycle.warming },
    get adminUrl () { return admin?.url ?? null },
    lifecycle,
    offline: (opts?: { reason?: string }) => lifecycle.offline(opts?.reason ?? 'api'),
    online: () => lifecycle.online('api'),
    shutdown: async (reason = 'shutdown()') => { await lifecycle.shutdown(reason); await app.close() },
    status: () => ({ ...lifecycle.status(), connections: connections(), earlyOffline: tracker?.describe() ?? null, adminUrl: admin?.url ?? null }),
    on: lifecycle.on.bind(lifecycle),
    off: lifecycle.off.bind(lifecycle)
  } satisfies LameduckDecorator)

  app.addHook('onListen', async function lameduckOnListen () {
    if (lifecycle.state !== 'starting') return
    app.server.on('connection', trackSocket)
    const base = instanceBase(app, options)
    lifecycle.start(base).catch((err: Error) => {
      broken = err
      log.error({ err, lameduck: { state: lifecycle.state } }, `lameduck: startup failed, not registering (/health/live now 503): ${err.message}`)
    })
  })

  // A plain app.close() (not a signal or shutdown()) closes now: deregister as a best effort.
  app.addHook('preClose', async function lameduckPreClose () {
    lifecycle.beginClose('app.close()')
  })
  app.addHook('onClose', async function lameduckOnClose () {
    uninstallSignals()
    await admin?.close()
    await lifecycle.stopped('closed')
  })
}

function instanceBase (app: FastifyInstance, options: ResolvedOptions) {
  const address = app.server.address()
  const listenPort = typeof address === 'object' && address !== null ? address.port : undefined
  const port = options.port ?? listenPort
  if (port === undefined) throw new Error('lameduck: cannot tell the listening port; set the port option')
  const host = options.host ?? defaultHost()
  return { id: options.instanceId ?? `${host}:${options.service}:${port}`, service: options.service, host, port, metadata: options.metadata }
}
