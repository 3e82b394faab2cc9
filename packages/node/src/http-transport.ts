import type { Server, Socket } from 'node:net'
import { isLeaving, type StateChange } from '@lameduck/core'
import { Connections, isHttp2Server, type ConnectionStats } from './connections.ts'
import { keepAliveTimeoutOf } from './keep-alive.ts'
import { metricsRoute } from './metrics-route.ts'
import { ANSWERED, DEFER, isRequest, RequestHook } from './requests.ts'
import type { ListenAddress, Transport, TransportHost } from './engine.ts'

/** Behind a sidecar, a keepAliveTimeout below this is warned of (Fastify's own 72 s is not). */
const SIDECAR_MIN_KEEP_ALIVE_MS = 60_000

/** After the drain, give connections this long to go by themselves before closing the rest. */
const CONNECTIONS_GONE_MS = 1_500

const kAttached = Symbol.for('lameduck.attached')

/** Whether an engine is attached to `server` (a second attach() is refused). */
export function isAttached (server: Server): boolean {
  return (server as { [kAttached]?: boolean })[kAttached] === true
}

/**
 * attach()'s transport: a node:http, node:https or node:http2 server. Tracks its
 * connections (the idle sweep), counts and marks requests through one hook on the
 * server's emit, answers the probe routes, holds the app's own server.close()
 * until the offline sequence is over, and closes connections after it.
 */
export class HttpTransport implements Transport {
  readonly server: Server
  readonly connections: Connections
  readonly requests: RequestHook
  readonly #host: TransportHost
  #undo: Array<() => void> = []

  constructor (server: Server, host: TransportHost) {
    this.server = server
    this.#host = host
    const options = host.options
    this.connections = new Connections(server, () => isLeaving(host.lifecycle.state))
    this.requests = new RequestHook({
      inflight: host.inflight,
      tracker: host.tracker,
      routes: options.routes,
      serveRoutes: options.serveRoutes,
      probe: (kind) => host.probe(kind)
    })
    ;(server as { [kAttached]?: boolean })[kAttached] = true
    this.#undo.push(() => { delete (server as { [kAttached]?: boolean })[kAttached] })
    this.#interceptEmit()
    this.#holdAppClose()
    const onClose = (): void => { host.close().catch(() => {}) }
    server.once('close', onClose)
    this.#undo.push(() => { server.off('close', onClose) })
  }

  stats (): ConnectionStats { return this.connections.stats() }

  longLived (): number { return this.connections.stats().upgraded }

  destroyAll (): void { this.connections.destroyAll() }

  onState (change: StateChange): void {
    const leaving = isLeaving(change.to)
    this.requests.mark(leaving ? change.to : null)
    // Keep-alive clients parked on an idle connection would hold on to this instance past the window.
    // Behind a sidecar the only client is the sidecar: it moves the consumers, and closing its idle
    // upstream connections under it would race its next request on one (Envoy answers 503 UC).
    if (leaving && this.#host.options.sidecar === false) this.connections.sweeper.start(); else this.connections.sweeper.stop()
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

  whenReady (start: () => void): () => void {
    const server = this.server
    if (server.listening) queueMicrotask(start); else server.on('listening', start)
    return () => { server.off('listening', start) }
  }

  address (): ListenAddress | null {
    const address = this.server.address()
    return typeof address === 'object' && address !== null ? { address: address.address, port: address.port } : null
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
    const m = this.#host.options.metrics
    const host = this.#host
    const scrape = m.listener === 'app' && host.options.serveRoutes ? metricsRoute(m.path, () => host.renderMetrics()) : () => false
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
    const lifecycle = this.#host.lifecycle
    const log = this.#host.log
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

  checkAtStart (): void { this.#checkKeepAlive() }

  /** An idle HTTP/1 connection the client may hold past the window is closed at exit, racing its next request. */
  #checkKeepAlive (): void {
    if (isHttp2Server(this.server)) return
    const keepAliveTimeout = keepAliveTimeoutOf(this.server)
    const options = this.#host.options
    if (options.sidecar !== false) { this.#checkSidecarKeepAlive(keepAliveTimeout); return }
    const windowMs = options.window.totalMs
    if (keepAliveTimeout !== 0 && keepAliveTimeout <= windowMs) return
    const now = keepAliveTimeout === 0 ? 'no keep-alive timeout (keepAliveTimeout 0)' : `keepAliveTimeout ${keepAliveTimeout} ms, longer than the drain window (${windowMs} ms)`
    this.#host.log.warn({ lameduck: { keepAliveTimeout, windowMs } },
      `lameduck: the server has ${now}: a client may hold an idle keep-alive connection past the window, and closing it at exit resets a request sent on it at that moment; set the server's keepAliveTimeout below the window (clients drop an idle connection when the Keep-Alive timeout the server advertises runs out)`)
  }

  /**
   * Behind a sidecar the clients hold their connections to the sidecar, so the window does not
   * bound the app's keep-alive. What matters is the other end: Envoy keeps idle upstream connections
   * for an hour, and a short keepAliveTimeout has Node close one as Envoy reuses it (503 UC).
   */
  #checkSidecarKeepAlive (keepAliveTimeout: number): void {
    if (keepAliveTimeout === 0 || keepAliveTimeout >= SIDECAR_MIN_KEEP_ALIVE_MS) return
    this.#host.log.warn({ lameduck: { keepAliveTimeout } },
      `lameduck: behind a sidecar with keepAliveTimeout ${keepAliveTimeout} ms: the server closes an idle connection of the sidecar's pool as the sidecar may be reusing it, and Envoy answers that request 503 (upstream connection termination); set keepAliveTimeout to 0 or above the sidecar's upstream idle timeout (Envoy's default: 1 h)`)
  }

  /** After the offline sequence: connections go by themselves (bounded), the rest are closed with the app. */
  async closeAfterDrain (): Promise<void> {
    await this.connections.gone(CONNECTIONS_GONE_MS)
    const idle = this.connections.idleKeepAlive()
    const log = this.#host.log
    if (idle > 0) {
      log.warn({ lameduck: { idleKeepAlive: idle, keepAliveTimeout: keepAliveTimeoutOf(this.server) } },
        `lameduck: closing ${idle} idle keep-alive connection(s) that clients still hold: a request sent on one as it closes is reset (keep the server's keepAliveTimeout below the window, and clients drop them before this)`)
    }
    const upgraded = this.connections.upgraded.size
    if (upgraded > 0) {
      log.warn({ lameduck: { upgraded } }, `lameduck: ${upgraded} upgraded connection(s) still open ${CONNECTIONS_GONE_MS} ms after 'goingAway' (closing); destroying them (close them with 1001 Going Away on 'goingAway')`)
      for (const socket of this.connections.upgraded) socket.destroy()
    }
    await (this.#host.options.closeApp ?? (() => closeServer(this.server, this.connections, this.closeNow)))()
  }

  detach (): void {
    this.connections.detach()
    for (const undo of this.#undo.splice(0).reverse()) undo()
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
