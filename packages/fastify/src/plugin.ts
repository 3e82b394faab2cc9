import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { CONSUMER_HEADER, ConsumerTracker, LEAVING_STATES, Lifecycle, STATE_HEADER, type DrainStep, type OfflineReport, type StartupStep } from '@lameduck/core'
import { startAdmin, type AdminServer } from './admin.ts'
import { defaultHost } from './host.ts'
import { resolveOptions, type LameduckOptions, type ResolvedOptions } from './options.ts'
import { installSignals } from './signals.ts'
import { sidecarSteps } from './sidecar.ts'
import { IdleSweeper, kBusy, kUsed, type TrackedSocket } from './idle-sweeper.ts'

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
}

export async function lameduckPlugin (app: FastifyInstance, input: LameduckOptions): Promise<void> {
  const options = resolveOptions(input, input?.registry?.windows)
  const log = app.log
  const sidecar = options.sidecar === false ? null : sidecarSteps(options.sidecar)
  const steps: { beforeRegister: StartupStep[], afterWindow: DrainStep[] } = sidecar ?? { beforeRegister: [], afterWindow: [] }

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
  const sockets = new Set<TrackedSocket>()
  let closedWhileDraining = 0
  const connections = () => ({ open: sockets.size, closedWhileDraining })
  function trackSocket (socket: TrackedSocket): void {
    sockets.add(socket)
    socket.once('close', () => {
      sockets.delete(socket)
      if (LEAVING_STATES.has(lifecycle.state)) closedWhileDraining++
    })
  }

  let broken: Error | null = null

  // Per-request work happens in one raw 'request' listener, prepended so it runs
  // before Fastify can write headers: no Fastify hooks and no per-request closures
  // on the hot path (see bench/overhead.ts).
  const inflight = lifecycle.inflight
  function endRequest (this: ServerResponse): void {
    inflight.end()
    const socket = this.req.socket as TrackedSocket | null
    if (socket) socket[kBusy]--
  }
  const untrackedPaths = options.routes === false ? [] : [options.routes.ready, options.routes.live]
  let marking: string | null = null // the state to announce, once draining
  function lameduckOnRawRequest (req: IncomingMessage, res: ServerResponse): void {
    inflight.start()
    const socket = req.socket as TrackedSocket
    socket[kBusy] = (socket[kBusy] ?? 0) + 1
    socket[kUsed] = inflight.total
    res.on('close', endRequest)
    if (marking !== null) {
      res.setHeader('connection', 'close')
      res.setHeader(STATE_HEADER, marking)
    }
    if (tracker !== undefined && !untrackedPaths.includes(req.url ?? '')) {
      const consumer = req.headers[CONSUMER_HEADER]
      const id = typeof consumer === 'string' ? consumer : undefined
      tracker.seen(id)
      if (marking !== null) tracker.told(id)
    }
  }
  const sweeper = new IdleSweeper(sockets)
  lifecycle.on('state', (change) => {
    marking = LEAVING_STATES.has(change.to) ? change.to : null
    // Keep-alive clients parked on an idle socket would hold on to this instance
    // past the window; busy ones are moved off by `connection: close`.
    if (marking !== null) sweeper.start(); else sweeper.stop()
  })
  app.server.on('connection', trackSocket)
  app.server.prependListener('request', lameduckOnRawRequest)

  if (options.routes !== false) {
    app.get(options.routes.ready, { logLevel: 'warn' }, async function lameduckReady (_req, reply) {
      const state = lifecycle.state
      if (state === 'serving') return { state, warming: lifecycle.warming }
      return reply.code(503).send({ state })
    })
    app.get(options.routes.live, { logLevel: 'warn' }, async function lameduckLive (_req, reply) {
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
    sweeper.stop()
    uninstallSignals()
    await admin?.close()
    await lifecycle.stopped('closed')
    await sidecar?.close()
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
