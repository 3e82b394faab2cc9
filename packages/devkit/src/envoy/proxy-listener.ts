// The data-plane listener: an HTTP/1.1 reverse proxy with keep-alive on both sides.
// A net.Server accepts (so connections can wait unaccepted until the workers start, and
// the listener can stop accepting while existing connections live on) and hands each
// socket to a node:http server. Before each response is encoded the drain manager is
// asked whether to close the connection, as Envoy's HTTP connection manager does.
import { randomUUID } from 'node:crypto'
import { Agent, createServer, request, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse } from 'node:http'
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net'
import type { AccessLogEntry } from './access-log.ts'
import type { DrainManager, TrafficDirection } from './drain-manager.ts'
import type { ResolvedEnvoyOptions } from './options.ts'
import { classifyFailure, responseCodeDetails, responseFlags, retryBackoffMs, upstreamResetBody, wouldRetry, type UpstreamFailure } from './retry-policy.ts'
import { listenerStatName, listenerStats, type ListenerStats, type StatStore } from './stats-store.ts'

interface Conn {
  socket: Socket
  worker: number
  /** Requests in flight on this connection. */
  busy: number
  /** The HCM has decided to drain it: every response says `connection: close`. */
  draining: boolean
  proactive: NodeJS.Timeout | null
}

export interface ProxyHost {
  options: ResolvedEnvoyOptions
  store: StatStore
  drain: DrainManager
  healthCheckFailed(): boolean
  /** One access-log entry per proxied request. */
  log(entry: AccessLogEntry): void
}

/** One data-plane listener: where it listens, where it forwards, how its stats are named. */
export interface ListenerConfig {
  name: string
  upstream: URL
  port: number
  host: string
  direction: TrafficDirection
  statPrefix: string
  /** The address part of `listener.<address>.*`; default the bound `<ip>_<port>`. */
  statAddress?: string
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'http2-settings'])
const MAX_BODY_BYTES = 16 * 1024 * 1024

export class ProxyListener {
  readonly host: ProxyHost
  readonly config: ListenerConfig
  port = 0
  statAddress = ''
  accepting = false
  #net: NetServer
  #http: Server
  #agent: Agent
  #conns = new Map<Socket, Conn>()
  #queued: Socket[] = []
  #workersStarted = false
  #nextWorker = 0
  #stats!: ListenerStats
  #timers = new Set<NodeJS.Timeout>()

  constructor (host: ProxyHost, config: ListenerConfig) {
    this.host = host
    this.config = config
    this.#agent = new Agent({ keepAlive: true })
    this.#http = createServer((req, res) => this.#onRequest(req, res))
    this.#http.keepAliveTimeout = host.options.idleTimeoutMs
    this.#http.on('clientError', (_err, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 11\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nBad Request')
      else socket.destroy()
    })
    this.#net = createNetServer({ pauseOnConnect: true }, (socket) => {
      if (this.#workersStarted) this.#adopt(socket)
      else this.#queued.push(socket)
    })
    host.drain.onStart(() => {
      if (host.drain.startedFor(config.direction) !== null) this.#scheduleProactiveDrain()
    })
  }

  get connections (): number { return this.#conns.size }

  async listen (): Promise<void> {
    const { port, host } = this.config
    await new Promise<void>((resolve, reject) => {
      this.#net.once('error', reject)
      this.#net.listen(port, host, () => { this.#net.off('error', reject); resolve() })
    })
    this.port = (this.#net.address() as AddressInfo).port
    this.statAddress = this.config.statAddress ?? listenerStatName(host, this.port)
    this.#stats = listenerStats(this.host.store, this.statAddress, this.config.statPrefix, this.host.options.concurrency)
    this.accepting = true
  }

  /** Init done: workers accept, including connections that waited in the backlog. */
  startWorkers (): void {
    this.#workersStarted = true
    for (const socket of this.#queued.splice(0)) this.#adopt(socket)
  }

  /** stopListeners(): no new connections; existing ones live on. Returns false if already stopped. */
  stop (): boolean {
    if (!this.accepting) return false
    this.accepting = false
    this.#net.close()
    for (const socket of this.#queued.splice(0)) socket.destroy()
    return true
  }

  /** /quitquitquit and close(): every connection goes at once. */
  async close (): Promise<void> {
    this.stop()
    for (const t of this.#timers) clearTimeout(t)
    for (const conn of this.#conns.values()) conn.socket.destroy()
    this.#agent.destroy()
    await new Promise<void>((resolve) => this.#http.close(() => resolve()))
  }

  #adopt (socket: Socket): void {
    const worker = this.#nextWorker++ % this.host.options.concurrency
    const conn: Conn = { socket, worker, busy: 0, draining: false, proactive: null }
    this.#conns.set(socket, conn)
    const s = this.#stats
    for (const stat of [s.cxActive, s.cxTotal, s.workerCxActive[worker]!, s.workerCxTotal[worker]!, s.httpCxActive, s.httpCxTotal]) stat.inc()
    socket.once('close', () => {
      this.#conns.delete(socket)
      if (conn.proactive !== null) this.#clearTimer(conn.proactive)
      for (const stat of [s.cxActive, s.workerCxActive[worker]!, s.httpCxActive]) stat.dec()
    })
    this.#http.emit('connection', socket)
    socket.resume()
  }

  // Newest Envoy drains the connections still not draining after 2/3 of the drain time
  // (e.g. idle ones) at a random point in the remaining third; idle ones are closed.
  // Connections accepted later drain on their responses, like any during a drain.
  #proactiveFrom: number | null = null

  #scheduleProactiveDrain (): void {
    const { proactiveIdleDrain, drainTimeMs } = this.host.options
    if (!proactiveIdleDrain || this.#proactiveFrom !== null) return
    this.#setTimer(() => {
      this.#proactiveFrom = Date.now()
      for (const conn of this.#conns.values()) this.#scheduleConn(conn)
    }, (drainTimeMs * 2) / 3)
  }

  #scheduleConn (conn: Conn): void {
    if (conn.draining || conn.proactive !== null || this.#proactiveFrom === null) return
    const remaining = Math.max(0, this.#proactiveFrom + this.host.options.drainTimeMs / 3 - Date.now())
    conn.proactive = this.#setTimer(() => {
      conn.proactive = null
      if (conn.draining) return
      conn.draining = true
      this.#stats.drainClose.inc()
      if (conn.busy === 0) conn.socket.end()
    }, this.host.options.random() * remaining)
  }

  #setTimer (fn: () => void, ms: number): NodeJS.Timeout {
    const t = setTimeout(() => { this.#timers.delete(t); fn() }, ms)
    t.unref()
    this.#timers.add(t)
    return t
  }

  #clearTimer (t: NodeJS.Timeout): void {
    clearTimeout(t)
    this.#timers.delete(t)
  }

  #onRequest (req: IncomingMessage, res: ServerResponse): void {
    const conn = this.#conns.get(req.socket)
    if (conn === undefined) { res.destroy(); return }
    const s = this.#stats
    conn.busy++
    s.rqTotal.inc()
    s.rqActive.inc()
    res.once('close', () => {
      conn.busy--
      s.rqActive.dec()
      // Marked draining after its headers went out: close once idle.
      if (conn.draining && conn.busy === 0) conn.socket.end()
    })
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_BODY_BYTES) chunks.push(chunk)
    })
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) { this.#localReply(conn, res, 413, 'Payload Too Large'); return }
      this.#forward(conn, req, res, Buffer.concat(chunks))
    })
    req.on('error', () => res.destroy())
  }

  #forward (conn: Conn, req: IncomingMessage, res: ServerResponse, body: Buffer): void {
    const started = Date.now()
    const log = (status: number, responseFlags: string, details: string, attempts: number): void =>
      this.host.log({ method: req.method ?? 'GET', path: req.url ?? '/', status, responseFlags, details, attempts, at: started })
    let finished = false
    let attempt = 0
    let current: ClientRequest | null = null
    // The route timeout covers every try, retries included, up to the end of the response (router docs).
    const { upstreamTimeoutMs } = this.host.options
    const timer = upstreamTimeoutMs > 0
      ? this.#setTimer(() => {
        finished = true
        current?.destroy()
        if (res.headersSent) { res.destroy(); return } // the body did not finish in time
        log(504, 'UT', 'upstream_response_timeout', attempt)
        this.#localReply(conn, res, 504, 'upstream request timeout')
      }, upstreamTimeoutMs)
      : null
    const finish = (): boolean => {
      if (finished) return false
      finished = true
      if (timer !== null) this.#clearTimer(timer)
      return true
    }
    const tryOnce = (): void => {
      attempt++
      current = this.#tryUpstream(req, res, body, {
        onResponse: (ures) => {
          if (finished) { ures.destroy(); return }
          // No retry after this; the route timeout still covers the body.
          ures.once('end', () => { finish() })
          const headers = copyHeaders(ures.headers)
          headers.server = 'envoy' // server_header_transformation: OVERWRITE
          headers['x-envoy-upstream-service-time'] = String(Date.now() - started)
          this.#writeHead(conn, res, ures.statusCode ?? 502, headers)
          log(ures.statusCode ?? 502, '-', 'via_upstream', attempt)
          ures.pipe(res)
          ures.on('error', () => res.destroy())
        },
        onFailure: (failure) => {
          if (finished) return
          const { retryOn, upstreamRetries, random } = this.host.options
          const retriable = wouldRetry(retryOn, failure)
          if (retriable && attempt <= upstreamRetries && !res.destroyed) {
            this.#setTimer(tryOnce, retryBackoffMs(attempt, random))
            return
          }
          finish()
          log(503, responseFlags(failure, retriable), responseCodeDetails(failure), attempt)
          this.#localReply(conn, res, 503, upstreamResetBody(failure, attempt > 1))
        }
      })
    }
    res.once('close', () => { if (!res.writableFinished) { finish(); current?.destroy() } })
    tryOnce()
  }

  /** One upstream try. A failure before the response says whether any request byte went out. */
  #tryUpstream (req: IncomingMessage, res: ServerResponse, body: Buffer, on: { onResponse(ures: IncomingMessage): void, onFailure(failure: UpstreamFailure): void }): ClientRequest {
    const { upstream } = this.config
    const up = request({
      hostname: upstream.hostname,
      port: upstream.port === '' ? 80 : Number(upstream.port),
      method: req.method,
      path: req.url,
      headers: this.#requestHeaders(req, body.length),
      agent: this.#agent
    })
    let connected = false
    let bytesBefore = 0
    let socket: Socket | null = null
    // 'socket' is emitted before the request is flushed onto it (http client onSocketNT).
    up.once('socket', (s: Socket) => {
      socket = s
      bytesBefore = s.bytesWritten
      connected = !s.connecting
      if (s.connecting) s.once('connect', () => { connected = true })
    })
    up.on('response', on.onResponse)
    up.on('error', (err: NodeJS.ErrnoException) => {
      if (res.headersSent || res.destroyed) { res.destroy(); return }
      const sent = connected && socket !== null && (socket as Socket).bytesWritten > bytesBefore
      on.onFailure(classifyFailure(err, connected, sent))
    })
    up.end(body)
    return up
  }

  #requestHeaders (req: IncomingMessage, length: number): OutgoingHttpHeaders {
    const headers = copyHeaders(req.headers)
    headers['content-length'] = String(length)
    if (length === 0 && (req.method === 'GET' || req.method === 'HEAD')) delete headers['content-length']
    headers['x-forwarded-proto'] ??= 'http'
    headers['x-request-id'] ??= randomUUID()
    if (this.host.options.upstreamTimeoutMs > 0) headers['x-envoy-expected-rq-timeout-ms'] = String(this.host.options.upstreamTimeoutMs)
    return headers
  }

  #writeHead (conn: Conn, res: ServerResponse, status: number, headers: OutgoingHttpHeaders): void {
    const { drain, options, healthCheckFailed } = this.host
    if (!conn.draining && drain.drainClose(this.config.direction, healthCheckFailed(), options.drainType === 'modify_only')) {
      conn.draining = true
      this.#stats.drainClose.inc()
    }
    if (conn.draining) headers.connection = 'close'
    // Envoy sends no `connection: keep-alive` / `keep-alive` headers (keep-alive is HTTP/1.1's
    // default); Node adds them unless the header was removed, which keeps the connection open.
    else res.removeHeader('connection')
    this.#stats.rqXx(Math.min(5, Math.max(1, Math.floor(status / 100)))).inc()
    res.writeHead(status, headers)
  }

  #localReply (conn: Conn, res: ServerResponse, status: number, body: string): void {
    if (res.headersSent || res.destroyed) { res.destroy(); return }
    this.#writeHead(conn, res, status, { 'content-type': 'text/plain', 'content-length': String(Buffer.byteLength(body)), server: 'envoy' })
    res.end(body)
  }
}

function copyHeaders (incoming: IncomingHttpHeaders): OutgoingHttpHeaders {
  const listed = new Set(String(incoming.connection ?? '').toLowerCase().split(',').map((s) => s.trim()).filter(Boolean))
  const out: OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name)) continue
    out[name] = value
  }
  return out
}
