import { EventEmitter } from 'node:events'
import type { Server } from 'node:net'
import type { Socket } from 'node:net'
import { attachObservers, buildStatus, ConsumerTracker, redactedErrorCopy, InFlightTracker, InvalidOptionError, isLeaving, Lifecycle, type LifecycleEvents, type LifecycleStatus, type Logger } from '@lameduck/core'
import { lifecycleBackend } from './admin-actions.ts'
import { startAdmin, type AdminServer } from './admin.ts'
import { workerResponder } from './cluster.ts'
import { Connections, isHttp2Server } from './connections.ts'
import { keepAliveTimeoutOf } from './keep-alive.ts'
import { defaultHost, unreachableAdvertised } from './host.ts'
import { stderrLogger } from './logger.ts'
import { Metrics } from './metrics.ts'
import { metricsRoute } from './metrics-route.ts'
import { resolveOptions, type AttachOptions, type ResolvedOptions } from './options.ts'
import { probeAnswer, type ProbeAnswer, type ProbeKind } from './probes.ts'
import { ANSWERED, DEFER, isRequest, RequestHook } from './requests.ts'
import { installSignals } from './signals.ts'
import { watchWindowEnd } from './window-watch.ts'
import { TerminationMessage } from './termination-message.ts'
import { createHandle, type GoingAway, type LameduckHandle } from './handle.ts'

/** The HTTP servers attach() takes: node:http, node:https, node:http2 (h2c and h2). */
export type AttachableServer = Server

/** Behind a sidecar, a keepAliveTimeout below this is warned of (Fastify's own 72 s is not). */
const SIDECAR_MIN_KEEP_ALIVE_MS = 60_000

/** After the drain, give connections this long to go by themselves before closing the rest. */
const CONNECTIONS_GONE_MS = 1_500

const kAttached = Symbol.for('lameduck.attached')

/**
 * Attaches the lameduck lifecycle to an HTTP server: connection tracking, the
 * idle sweep, drain marks, in-flight counting, the probe routes, the admin
 * listener and the signal path. The lifecycle starts once the server listens.
 */
export async function attach (server: AttachableServer, input: AttachOptions): Promise<LameduckHandle> {
  const options = resolveOptions(input, input?.registry?.windows)
  if (typeof server !== 'object' || server === null || typeof server.listen !== 'function') {
    throw new InvalidOptionError('server', 'attach() takes a node:http, node:https or node:http2 server, e.g. attach(http.createServer(app), options)')
  }
  if ((server as { [kAttached]?: boolean })[kAttached] === true) {
    throw new InvalidOptionError('server', 'lameduck is already attached to this server; attach once (close() the first handle to attach again)')
  }
  const engine = new Engine(server, options)
  try {
    if (options.metrics.registry !== undefined) await engine.metrics.register(options.metrics.registry)
    await engine.startAdmin()
  } catch (err) {
    await engine.close()
    throw err
  }
  return engine.handle
}

export class Engine {
  readonly server: Server
  readonly options: ResolvedOptions
  readonly log: Logger
  readonly lifecycle: Lifecycle
  readonly tracker: ConsumerTracker | undefined
  readonly connections: Connections
  readonly requests: RequestHook
  readonly events = new EventEmitter<{ goingAway: [GoingAway] }>()
  readonly handle: LameduckHandle
  readonly metrics: Metrics
  admin: AdminServer | null = null
  broken: Error | null = null
  readonly termination: TerminationMessage | null
  #undo: Array<() => void> = []
  #closed: Promise<void> | null = null
  #detachObservers: () => Promise<void> = async () => {}

  constructor (server: Server, options: ResolvedOptions) {
    this.server = server
    this.options = options
    this.log = options.logger ?? stderrLogger()
    for (const message of options.deprecations) this.log.warn({ lameduck: { deprecated: true } }, message)
    const inflight = new InFlightTracker()
    this.tracker = options.earlyOffline === false
      ? undefined
      : new ConsumerTracker({ windowMs: options.window.totalMs, quietMs: options.earlyOffline.quietMs, inflight })
    this.lifecycle = this.#createLifecycle(inflight)
    const termination = options.terminationMessage === false ? null : new TerminationMessage(this.lifecycle, this.log, options.terminationMessage.path)
    this.termination = termination
    if (termination !== null) this.#undo.push(() => { termination.detach() })
    this.metrics = new Metrics({ lifecycle: this.lifecycle, connections: () => this.connections.stats(), maxRequestMs: options.maxRequestMs })
    this.#undo.push(() => this.metrics.detach())
    this.#detachObservers = attachObservers(options.observers, { lifecycle: this.lifecycle, logger: this.log })
    this.connections = new Connections(server, () => isLeaving(this.lifecycle.state))
    this.requests = new RequestHook({
      inflight,
      tracker: this.tracker,
      routes: options.routes,
      serveRoutes: options.serveRoutes,
      probe: (kind) => this.probe(kind)
    })
    ;(server as { [kAttached]?: boolean })[kAttached] = true
    this.#undo.push(() => { delete (server as { [kAttached]?: boolean })[kAttached] })
    this.#watchState()
    this.#interceptEmit()
    this.#holdAppClose()
    this.#installSignals()
    this.#startWhenListening()
    this.#undo.push(workerResponder(lifecycleBackend({ lifecycle: this.lifecycle, connections: () => this.connections.stats(), status: () => this.status(), metrics: () => this.metrics.render() }), () => this.handle.shutdown('cluster primary')))
    this.handle = createHandle(this)
  }

  #createLifecycle (inflight: InFlightTracker): Lifecycle {
    const o = this.options
    if (o.window.totalMs + o.maxRequestMs > o.shutdownTimeoutMs) {
      this.log.warn({ lameduck: { windowMs: o.window.totalMs, maxRequestMs: o.maxRequestMs, shutdownTimeoutMs: o.shutdownTimeoutMs } },
        'lameduck: window + maxRequestMs exceeds shutdownTimeoutMs: a slow request at the end of a drain would be cut')
    }
    return new Lifecycle({ ...o.lifecycle, earlyOffline: this.tracker, inflight, logger: this.log })
  }

  #goingAway (cause: GoingAway['cause']): void {
    const event: GoingAway = { cause, upgraded: this.connections.stats().upgraded, inflight: this.lifecycle.inflight.count }
    this.log.info({ lameduck: { goingAway: event } }, `lameduck: going away (${cause}): ${event.upgraded} upgraded connection(s) and ${event.inflight} request(s) open; the app's 'goingAway' listeners close them`)
    this.events.emit('goingAway', event)
  }

  #watchState (): void {
    let unwatchWindow: (() => void) | null = null
    let windowOver = false
    const onState: (...args: LifecycleEvents['state']) => void = (change) => {
      unwatchWindow?.()
      unwatchWindow = null
      // Once the window is over no consumer routes here: the app may end its WebSockets and streams.
      if (change.to === 'draining') {
        windowOver = false
        unwatchWindow = watchWindowEnd(this.lifecycle, this.tracker, () => { windowOver = true; this.#goingAway('window') })
      } else if (change.from === 'draining' && change.to === 'offline' && !windowOver) {
        this.#goingAway('window') // the drain got there first (same instant)
      }
      if (change.to === 'serving') this.broken = null // a startup run again by online() passed
      const leaving = isLeaving(change.to)
      this.requests.mark(leaving ? change.to : null)
      // Keep-alive clients parked on an idle connection would hold on to this instance past the window.
      // Behind a sidecar the only client is the sidecar: it moves the consumers, and closing its idle
      // upstream connections under it would race its next request on one (Envoy answers 503 UC).
      if (leaving && this.options.sidecar === false) this.connections.sweeper.start(); else this.connections.sweeper.stop()
      if (change.to === 'closing') this.#goingAway('closing')
    }
    const onOffline: (...args: LifecycleEvents['offline']) => void = (report) => {
      if (report.inflightAtEnd === 0 || report.outcome !== 'offline') return
      this.log.warn({ lameduck: { inflight: report.inflightAtEnd, maxRequestMs: this.options.maxRequestMs } },
        `lameduck: maxRequestMs (${this.options.maxRequestMs} ms) reached with ${report.inflightAtEnd} request(s) still in flight; offline without them (they go on until the app closes): ${this.describeInflight()}`)
    }
    this.lifecycle.on('state', onState)
    this.lifecycle.on('offline', onOffline)
    this.#undo.push(() => { unwatchWindow?.(); this.lifecycle.off('state', onState); this.lifecycle.off('offline', onOffline) })
  }

  /** Names the requests in flight (method, URL, age), e.g. for what a bound cut. */
  describeInflight (): string {
    const now = Date.now()
    const list = this.requests.inflightRequests()
    const shown = list.slice(0, 10).map(([r, at]) => {
      const [method, url] = isRequest(r) ? [r.method, r.url] : [r[':method'], r[':path']]
      return `${method ?? '?'} ${url ?? '?'} (open ${now - at} ms)`
    })
    return shown.join(', ') + (list.length > 10 ? `, and ${list.length - 10} more` : '')
  }

  /**
   * One hook on the server's emit, not a listener: it runs before any listener
   * (so a probe route is answered without the app), and it sees 'upgrade'
   * without adding a listener (which would change what Node does with upgrades)
   * and 'stream' without adding one (which would not run before the app's).
   */
  #interceptEmit (): void {
    const server = this.server
    const own = Object.hasOwn(server, 'emit')
    const original = server.emit
    const requests = this.requests
    const connections = this.connections
    const m = this.options.metrics
    const scrape = m.listener === 'app' && this.options.serveRoutes ? metricsRoute(m.path, () => this.metrics.render()) : () => false
    const emit = original as (this: Server, ...args: unknown[]) => boolean
    // Named parameters, and `call` on the per-request events ('request', and 'stream' with its
    // four arguments): no `arguments` object per request.
    function lameduckEmit (this: Server, event: string | symbol, a?: any, b?: any, c?: any, d?: any): boolean {
      // 'checkContinue' and 'checkExpectation' carry the request instead of 'request' when the app listens for them.
      if (event === 'request' || event === 'checkContinue' || event === 'checkExpectation') {
        if (scrape(a, b)) return true
        const verdict = requests.onRequest(a, b)
        if (verdict === ANSWERED) return true
        // Not a microtask: Node runs those between the requests of one read.
        if (verdict === DEFER) { setImmediate(() => { emit.call(server, event, a, b) }); return true }
        return emit.call(this, event, a, b)
      }
      if (event === 'stream') {
        // An HTTP/2 app on the stream API: no 'request' will follow, so the stream is the request.
        if (this.listenerCount('request') === 0 && requests.onStream(a, b) === ANSWERED) return true
        return emit.call(this, event, a, b, c, d)
      }
      if (event === 'upgrade') connections.upgrade(b as Socket)
      return original.apply(this, arguments as unknown as Parameters<Server['emit']>)
    }
    server.emit = lameduckEmit as Server['emit']
    this.#undo.push(() => {
      if (server.emit !== lameduckEmit) return
      if (own) server.emit = original; else delete (server as { emit?: unknown }).emit
    })
  }

  /**
   * The app's own `server.close()` (an existing SIGTERM handler, say) would stop
   * accepting while the instance is still registered and consumers still route
   * here. So it is held: the offline sequence runs first (deregister, window,
   * in-flight), then the server closes and the app's callback runs. The engine's
   * own close, and a close once the instance is closing, go straight through.
   */
  #holdAppClose (): void {
    const server = this.server
    const own = Object.hasOwn(server, 'close')
    const close = server.close
    this.closeNow = (cb) => close.call(server, cb)
    const lifecycle = this.lifecycle
    const log = this.log
    function lameduckClose (this: Server, cb?: (err?: Error) => void): Server {
      const state = lifecycle.state
      if (state === 'closing' || state === 'stopped' || !server.listening) return close.call(this, cb)
      log.info({ lameduck: { state } }, `lameduck: server.close() called in state ${state}: running the offline sequence first (deregister, window, in-flight), then closing`)
      lifecycle.shutdown('server.close()').catch(() => {}).finally(() => { close.call(server, cb) })
      return server
    }
    server.close = lameduckClose as Server['close']
    this.#undo.push(() => {
      if (server.close !== lameduckClose) return
      if (own) server.close = close; else delete (server as { close?: unknown }).close
    })
  }

  /** Closes the server without waiting for the offline sequence (the engine's own close). */
  closeNow: (cb?: (err?: Error) => void) => void = () => {}

  #installSignals (): void {
    const o = this.options
    const uninstall = installSignals({
      lifecycle: this.lifecycle,
      logger: this.log,
      signals: o.signals,
      shutdownTimeoutMs: o.shutdownTimeoutMs,
      connections: this.connections,
      close: () => this.closeAfterDrain(),
      inflightDescription: () => this.describeInflight(),
      forced: (why) => { this.termination?.cut(why) },
      terminate: o.terminate
    })
    this.#undo.push(uninstall)
  }

  #startWhenListening (): void {
    const start = (): void => {
      if (this.lifecycle.state !== 'starting') return
      const base = instanceBase(this.server, this.options)
      this.#checkAdvertised(base.host)
      this.#checkKeepAlive()
      this.lifecycle.start(base).catch((err: Error) => {
        // A startup step's error is the app's text: redacted before /status and the log.
        this.broken = redactedErrorCopy(err)
        this.log.error({ err: this.broken, lameduck: { state: this.lifecycle.state } }, `lameduck: startup failed, not registering (/health/live now 503): ${this.broken.message}`)
      })
    }
    const onClose = (): void => { this.close().catch(() => {}) }
    if (this.server.listening) queueMicrotask(start); else this.server.on('listening', start)
    this.server.once('close', onClose)
    this.#undo.push(() => { this.server.off('listening', start); this.server.off('close', onClose) })
  }

  /** Warns once when consumers could not reach the advertised host (e.g. listening on 127.0.0.1, advertising the pod IP). */
  #checkAdvertised (advertised: string): void {
    const address = this.server.address()
    if (typeof address !== 'object' || address === null) return
    const why = unreachableAdvertised(address.address, advertised)
    if (why !== null) this.log.warn({ lameduck: { listen: address.address, advertised } }, `lameduck: advertising ${advertised} to the registry, but ${why}`)
  }

  /** An idle HTTP/1 connection the client may hold past the window is closed at exit, racing its next request. */
  #checkKeepAlive (): void {
    if (isHttp2Server(this.server)) return
    const keepAliveTimeout = keepAliveTimeoutOf(this.server)
    if (this.options.sidecar !== false) { this.#checkSidecarKeepAlive(keepAliveTimeout); return }
    const windowMs = this.options.window.totalMs
    if (keepAliveTimeout !== 0 && keepAliveTimeout <= windowMs) return
    const now = keepAliveTimeout === 0 ? 'no keep-alive timeout (keepAliveTimeout 0)' : `keepAliveTimeout ${keepAliveTimeout} ms, longer than the drain window (${windowMs} ms)`
    this.log.warn({ lameduck: { keepAliveTimeout, windowMs } },
      `lameduck: the server has ${now}: a client may hold an idle keep-alive connection past the window, and closing it at exit resets a request sent on it at that moment; set the server's keepAliveTimeout below the window (clients drop an idle connection when the Keep-Alive timeout the server advertises runs out)`)
  }

  /**
   * Behind a sidecar the clients hold their connections to the sidecar, so the window does not
   * bound the app's keep-alive. What matters is the other end: Envoy keeps idle upstream connections
   * for an hour, and a short keepAliveTimeout has Node close one as Envoy reuses it (503 UC).
   */
  #checkSidecarKeepAlive (keepAliveTimeout: number): void {
    if (keepAliveTimeout === 0 || keepAliveTimeout >= SIDECAR_MIN_KEEP_ALIVE_MS) return
    this.log.warn({ lameduck: { keepAliveTimeout } },
      `lameduck: behind a sidecar with keepAliveTimeout ${keepAliveTimeout} ms: the server closes an idle connection of the sidecar's pool as the sidecar may be reusing it, and Envoy answers that request 503 (upstream connection termination); set keepAliveTimeout to 0 or above the sidecar's upstream idle timeout (Envoy's default: 1 h)`)
  }

  async startAdmin (): Promise<void> {
    if (this.options.admin === false) return
    this.admin = await startAdmin({
      ...this.options.admin,
      lifecycle: this.lifecycle,
      logger: this.log,
      connections: () => this.connections.stats(),
      status: () => this.status(),
      metrics: this.options.metrics.listener === false ? undefined : () => this.metrics.render()
    })
  }

  probe (kind: ProbeKind): ProbeAnswer {
    return probeAnswer(this.lifecycle, kind, this.broken, this.options.readinessWhileDraining)
  }

  /** The /status document, built by core's one builder (the admin protocol's single definition). */
  status (): LifecycleStatus {
    return buildStatus(this.lifecycle, {
      connections: this.connections.stats(),
      earlyOffline: this.tracker?.describe() ?? null,
      broken: this.broken?.message ?? null,
      shutdownTimeoutMs: this.options.shutdownTimeoutMs,
      adminUrl: this.admin?.url ?? null,
      readinessWhileDraining: this.options.readinessWhileDraining
    })
  }

  /** After the offline sequence: connections go by themselves (bounded), the rest are closed with the app. */
  async closeAfterDrain (): Promise<void> {
    await this.connections.gone(CONNECTIONS_GONE_MS)
    const idle = this.connections.idleKeepAlive()
    if (idle > 0) {
      this.log.warn({ lameduck: { idleKeepAlive: idle, keepAliveTimeout: keepAliveTimeoutOf(this.server) } },
        `lameduck: closing ${idle} idle keep-alive connection(s) that clients still hold: a request sent on one as it closes is reset (keep the server's keepAliveTimeout below the window, and clients drop them before this)`)
    }
    const upgraded = this.connections.upgraded.size
    if (upgraded > 0) {
      this.log.warn({ lameduck: { upgraded } }, `lameduck: ${upgraded} upgraded connection(s) still open ${CONNECTIONS_GONE_MS} ms after 'goingAway' (closing); destroying them (close them with 1001 Going Away on 'goingAway')`)
      for (const socket of this.connections.upgraded) socket.destroy()
    }
    await (this.options.closeApp ?? (() => closeServer(this.server, this.connections, this.closeNow)))()
  }

  close (): Promise<void> {
    this.#closed ??= this.#close()
    return this.#closed
  }

  async #close (): Promise<void> {
    this.lifecycle.beginClose('closed') // while still listening: drain marks and the 'closing' goingAway
    this.connections.detach()
    for (const undo of this.#undo.splice(0).reverse()) undo()
    await this.admin?.close()
    await this.lifecycle.stopped('closed')
    // After 'stopped': an observer's last export (a span, a flush) sees the whole sequence.
    await this.#detachObservers()
    if (this.options.sidecar !== false) await this.options.sidecar.close()
  }
}

/** The default closeApp: stop accepting, close idle connections; busy ones close after their response. */
function closeServer (server: Server, connections: Connections, close: (cb: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) { resolve(); return }
    close(() => resolve())
    connections.closeIdle()
  })
}

function instanceBase (server: Server, options: ResolvedOptions) {
  const address = server.address()
  const listenPort = typeof address === 'object' && address !== null ? address.port : undefined
  const port = options.port ?? listenPort
  if (port === undefined) throw new Error('lameduck: cannot tell the listening port; set the port option')
  const host = options.host ?? defaultHost()
  return { id: options.instanceId ?? `${host}:${options.service}:${port}`, service: options.service, host, port, metadata: options.metadata }
}
