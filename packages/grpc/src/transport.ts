import type { Server } from '@grpc/grpc-js'
import type { ServerHttp2Session } from 'node:http2'
import { isLeaving, SHUTDOWN_DEFAULTS, type StateChange } from '@lameduck/core'
import type { ConnectionStats, GoingAway, ListenAddress, Transport, TransportHost } from '@lameduck/node/engine'
import { whenBound } from './binding.ts'
import { CallTable } from './calls.ts'
import { HEALTH_SERVICE, healthServiceDefinition } from './health-codec.ts'
import { HealthService } from './health.ts'
import type { ResolvedGrpcOptions } from './options.ts'
import { addInterceptor, http2Servers, serviceNames, sessions, type Binding } from './server-internals.ts'
import { goAway, tryShutdownAll, within } from './shutdown.ts'

/** After the drain, calls still open (streams the app did not end on 'goingAway') get this long before the cut. */
export const CLOSE_GRACE_MS = 1_500
/**
 * The most the close grace stretches: a call the server sees only as the close grace runs
 * out (a node starved for that long reads it just before the grace timer fires) still gets
 * CLOSE_GRACE_MS of its own, and a client that has not yet read its last answers gets
 * time to, up to this much after the close began. Inside the close slack that the shutdown
 * budget (and `lameduck plan`) counts, less the second the signal path gives the event loop
 * to empty before it exits.
 */
export const MAX_CLOSE_MS = SHUTDOWN_DEFAULTS.closeSlackMs - 1_000

const kAttached = Symbol.for('lameduck.grpc.attached')

export function isAttached (server: Server): boolean {
  return (server as { [kAttached]?: boolean })[kAttached] === true
}

/**
 * attachGrpc()'s transport: a @grpc/grpc-js Server. Counts calls through a
 * server interceptor, serves grpc.health.v1 on the lifecycle, starts the
 * lifecycle once the server is bound, sends GOAWAY to every connection when the
 * window is over, and closes with tryShutdown, bounded, then forceShutdown,
 * naming the calls the bound cut. The app's own tryShutdown()/forceShutdown()
 * (a SIGTERM handler, a framework's close) are held until the offline sequence is over.
 */
export class GrpcTransport implements Transport {
  readonly calls: CallTable
  readonly health: HealthService | null
  readonly #server: Server
  readonly #host: TransportHost
  readonly #options: ResolvedGrpcOptions
  readonly #shutdown: { tryShutdown: Server['tryShutdown'], forceShutdown: Server['forceShutdown'] }
  #binding: Binding | null = null
  readonly #hooked = new WeakSet<object>()
  #closedWhileDraining = 0
  /** Set once the connections were told to go (the window's GOAWAY, or the close): later ones are told on their first call. */
  #toldToGo = false
  #closing: Promise<void> | null = null
  #undo: Array<() => void> = []

  constructor (server: Server, host: TransportHost, options: ResolvedGrpcOptions) {
    this.#server = server
    this.#host = host
    this.#options = options
    this.#shutdown = { tryShutdown: server.tryShutdown, forceShutdown: server.forceShutdown }
    this.calls = new CallTable(host.inflight, host.tracker)
    this.health = options.health ? this.#serveHealth() : null
    this.#undo.push(addInterceptor(server, this.calls.interceptor()))
    ;(server as { [kAttached]?: boolean })[kAttached] = true
    this.#undo.push(() => { delete (server as { [kAttached]?: boolean })[kAttached] })
    this.#holdAppShutdown()
  }

  #serveHealth (): HealthService {
    const server = this.#server
    const health = new HealthService({
      serving: () => this.#host.probe('ready').statusCode === 200,
      knows: (name) => name === '' || name === HEALTH_SERVICE || serviceNames(server).has(name)
    })
    // attachGrpc() checked there is no health service yet: addService() cannot throw here.
    server.addService(healthServiceDefinition, health.implementation())
    this.#undo.push(() => { health.close(); server.removeService(healthServiceDefinition) })
    return health
  }

  stats (): ConnectionStats {
    this.#hookSessions()
    return { open: sessions(this.#server).length, upgraded: this.calls.streams, closedWhileDraining: this.#closedWhileDraining }
  }

  longLived (): number { return this.calls.streams }

  describeInflight (): string { return this.calls.describe() }

  onState (change: StateChange): void {
    this.calls.mark(isLeaving(change.to) ? change.to : null)
    // Back online (/online after an offline): new connections stay.
    if (change.to === 'serving') this.#toldToGo = false
    this.health?.changed()
  }

  goingAway (cause: GoingAway['cause']): void {
    if (cause !== 'window') return
    if (this.#host.options.sidecar !== false) {
      // Behind a sidecar the app's connections are the sidecar's own: a GOAWAY moves no consumer
      // (the sidecar's drain, next, does) and refuses the streams the sidecar has already sent,
      // which Envoy does not retry (Istio's inbound retry_on is reset-before-request). The close,
      // once the sidecar drained and the calls ended, says GOAWAY to connections with nothing in flight.
      this.#host.log.info({ lameduck: { inflight: this.#host.inflight.count } }, 'lameduck: window over: behind a sidecar, its drain moves the consumers; the gRPC connections get GOAWAY at the close')
      return
    }
    this.#toldToGo = true
    const told = goAway(this.#server)
    this.#host.log.info({ lameduck: { goAway: told, inflight: this.#host.inflight.count } },
      `lameduck: window over: GOAWAY to ${told} gRPC connection(s); clients reconnect elsewhere, ${this.#host.inflight.count} call(s) in flight complete (bound: maxRequestMs)`)
  }

  whenReady (start: () => void): () => void {
    return whenBound(this.#server, {
      name: this.#options.bindAddress,
      timeoutMs: this.#options.bindTimeoutMs,
      ready: (binding) => {
        this.#binding = binding
        this.#hookSessions()
        start()
      },
      failed: (err) => { this.#host.fail(err) }
    })
  }

  address (): ListenAddress | null {
    const b = this.#binding
    return b === null ? null : { address: b.address, port: b.port }
  }

  /** Counts connections that close while the instance is leaving, for the metrics. */
  #hookSessions (): void {
    for (const h2 of http2Servers(this.#server)) {
      if (this.#hooked.has(h2)) continue
      this.#hooked.add(h2)
      const track = (session: ServerHttp2Session): void => {
        session.once('close', () => { if (isLeaving(this.#host.lifecycle.state)) this.#closedWhileDraining++ })
        if (this.#toldToGo) this.#goAfterFirstCall(session)
      }
      h2.on('session', track)
      this.#undo.push(() => { h2.off('session', track) })
    }
    for (const s of sessions(this.#server)) {
      if (this.#hooked.has(s)) continue
      this.#hooked.add(s)
      s.once('close', () => { if (isLeaving(this.#host.lifecycle.state)) this.#closedWhileDraining++ })
    }
  }

  /**
   * A connection opened after the connections were told to go (a client reconnecting while the
   * listener is still open, a TLS handshake that finished late) never got that GOAWAY: left alone it
   * takes calls until the close cuts it, and calls on it fail as "Connection dropped". It gets its
   * own GOAWAY once its first call arrived (that call and any read with it are answered, as a new
   * HTTP connection's first request is): on the next turn, so the GOAWAY names every stream already read.
   */
  #goAfterFirstCall (session: ServerHttp2Session): void {
    session.once('stream', () => {
      setImmediate(() => { if (!session.closed && !session.destroyed) session.close() })
    })
  }

  /** After the offline sequence: Watch streams end, then tryShutdown, bounded, then forceShutdown with what it cut. */
  closeAfterDrain (): Promise<void> {
    this.#closing ??= this.#close()
    return this.#closing
  }

  async #close (): Promise<void> {
    this.#toldToGo = true
    this.health?.close()
    const closed = tryShutdownAll(this.#server, this.#shutdown.tryShutdown)
    const began = Date.now()
    let until = began + CLOSE_GRACE_MS
    while (!(await within(closed, until - Date.now()))) {
      // Each call open gets CLOSE_GRACE_MS from when the server saw it, within MAX_CLOSE_MS. With no
      // call open, what is left are connections whose client has not closed after the GOAWAY yet: it
      // is late reading (starved) and its answers are still in its socket buffer. Destroying one now
      // risks a reset (any client bytes the server has not read make the close an RST), and a reset
      // makes the client's kernel drop what it has not read: calls that completed would fail as
      // "Connection dropped". They close themselves once read; they get up to MAX_CLOSE_MS.
      const open = this.calls.list()
      const due = open.length === 0 ? began + MAX_CLOSE_MS : Math.min(Math.max(...open.map((c) => c.at)) + CLOSE_GRACE_MS, began + MAX_CLOSE_MS)
      if (due <= Date.now()) break
      until = due
    }
    if (!(await within(closed, 0))) this.#cut(`${Date.now() - began} ms after the drain (closing)`)
    await this.#host.close()
  }

  /** Forces the server down, naming the calls still open. */
  #cut (when: string): void {
    const open = this.calls.list().length
    if (open > 0) {
      this.#host.log.warn({ lameduck: { cut: this.calls.list().map((c) => ({ method: c.path, kind: c.kind, peer: c.peer, openMs: Date.now() - c.at })) } },
        `lameduck: ${open} gRPC call(s) still open ${when}; cutting them (forceShutdown): ${this.calls.describe()}`)
    }
    this.#shutdown.forceShutdown.call(this.#server)
  }

  destroyAll (): void { this.#shutdown.forceShutdown.call(this.#server) }

  /**
   * The app's own tryShutdown()/forceShutdown() (a SIGTERM handler, NestJS's
   * close) would stop the server while it is registered and consumers still
   * call it. Held: the offline sequence runs first, then tryShutdown, bounded,
   * or the forced close the app asked for. Once closing, they go straight through.
   */
  #holdAppShutdown (): void {
    const server = this.#server
    const { tryShutdown, forceShutdown } = this.#shutdown
    const { lifecycle, log } = this.#host
    const held = (name: string): boolean => {
      const state = lifecycle.state
      if (state === 'closing' || state === 'stopped') return false
      log.info({ lameduck: { state } }, `lameduck: server.${name}() called in state ${state}: running the offline sequence first (deregister, window, in-flight), then closing`)
      return true
    }
    const lameduckTryShutdown = (cb: (err?: Error) => void): void => {
      if (!held('tryShutdown')) { tryShutdown.call(server, cb); return }
      lifecycle.shutdown('server.tryShutdown()').catch(() => {}).then(() => this.closeAfterDrain()).then(() => { cb() }, cb)
    }
    const lameduckForceShutdown = (): void => {
      if (!held('forceShutdown')) { forceShutdown.call(server); return }
      lifecycle.shutdown('server.forceShutdown()').catch(() => {}).then(() => { this.#cut('when the app forced shutdown after the drain'); return this.#host.close() }).catch(() => {})
    }
    const own = { tryShutdown: Object.hasOwn(server, 'tryShutdown'), forceShutdown: Object.hasOwn(server, 'forceShutdown') }
    server.tryShutdown = lameduckTryShutdown
    server.forceShutdown = lameduckForceShutdown
    this.#undo.push(() => {
      if (server.tryShutdown === lameduckTryShutdown) { if (own.tryShutdown) server.tryShutdown = tryShutdown; else delete (server as Partial<Server>).tryShutdown }
      if (server.forceShutdown === lameduckForceShutdown) { if (own.forceShutdown) server.forceShutdown = forceShutdown; else delete (server as Partial<Server>).forceShutdown }
    })
  }

  detach (): void {
    for (const undo of this.#undo.splice(0).reverse()) undo()
  }
}
