import { errors } from 'undici'
import type { Dispatcher } from 'undici'
import type { IncomingHttpHeaders } from 'node:http'
import type { Duplex } from 'node:stream'
import type { InstanceEntry } from './instance-entry.ts'
import type { ResolvedOptions } from './options.ts'
import type { ServiceTable } from './service-table.ts'
import { STATE_HEADER } from './headers.ts'

type DispatchController = Dispatcher.DispatchController

/** The instance could not be reached: these count toward ejection. */
const CONNECT_ERRORS = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'ETIMEDOUT', 'EPIPE',
  'ENOTFOUND', 'EAI_AGAIN', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET'
])
/** Before the request was written, these also mean "nothing was sent": safe to send elsewhere. */
const NOT_SENT = new Set([...CONNECT_ERRORS, 'UND_ERR_CLOSED', 'UND_ERR_DESTROYED'])
/** After the request was written but before any response: worth another instance for idempotent requests. */
const LOST_BEFORE_RESPONSE = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'UND_ERR_HEADERS_TIMEOUT'])
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE', 'QUERY'])

/** Where a request goes: the service's table, and the scheme its instances are reached with. */
export interface Route { readonly table: ServiceTable, readonly protocol: string }

/**
 * Where a request stands. An attempt moves PICKING -> SENT -> RESPONDED; a failure
 * before RESPONDED may send it back to PICKING (a retry); DONE is final.
 */
type Phase = typeof PICKING | typeof SENT | typeof RESPONDED | typeof DONE
const PICKING = 0
/** The attempt's pool gave it a socket (onRequestStart): the request may have reached the instance. */
const SENT = 1
const RESPONDED = 2
/** The caller was told how it ended: every later callback is ignored. */
const DONE = 3

/** What the failures of one request have used up. */
interface Retries {
  /** Instances that failed this request, avoided by the next pick. */
  tried: InstanceEntry[]
  lastError: unknown
  /** The last failure came after the request was sent (its error is what the caller gets when nobody is left). */
  lostAfterSend: boolean
  connect: number
  idempotent: number
}

/** What a request handler needs from its balancer. */
export interface HandlerContext {
  readonly options: ResolvedOptions
  readonly closed: boolean
  readonly onDrain: (origin: URL) => void
}

function replayable (body: Dispatcher.DispatchOptions['body']): boolean {
  return body === null || body === undefined || typeof body === 'string' || body instanceof Uint8Array
}

/**
 * One request through the balancer: picks an instance, sends the request to its
 * pool, and decides what a failure means. A failure before the request reached a
 * socket (nothing sent) goes to another instance, for any method. Afterwards only
 * idempotent requests with a replayable body, and only when `retryIdempotent` allows.
 *
 * It is also the controller the caller's handler sees, for the whole request: an
 * abort reaches the attempt that is running, and ends the request at once when none
 * is (between attempts, or while one is still connecting). Every request ends in
 * exactly one of onResponseEnd, onResponseError or onRequestUpgrade.
 */
export class BalancedHandler implements Dispatcher.DispatchHandler, DispatchController {
  readonly #ctx: HandlerContext
  readonly #route: Route
  readonly #opts: Dispatcher.DispatchOptions
  readonly #handler: Dispatcher.DispatchHandler
  #entry: InstanceEntry | undefined
  /** The running attempt's controller, from its onRequestStart until it fails. */
  #attempt: DispatchController | null = null
  #reason: Error | null = null
  #phase: Phase = PICKING
  #aborted = false
  /** Created by the first failure: most requests never need it, and the handler is allocated per request. */
  #retries: Retries | undefined

  constructor (ctx: HandlerContext, route: Route, opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) {
    this.#ctx = ctx
    this.#route = route
    this.#opts = opts
    this.#handler = handler
  }

  // The caller's controller.
  get aborted (): boolean { return this.#aborted || (this.#attempt?.aborted ?? false) }
  get paused (): boolean { return this.#attempt?.paused ?? false }
  get reason (): Error | null { return this.#reason ?? this.#attempt?.reason ?? null }
  get rawHeaders (): DispatchController['rawHeaders'] { return this.#attempt?.rawHeaders }
  get rawTrailers (): DispatchController['rawTrailers'] { return this.#attempt?.rawTrailers }

  abort (reason: Error): void {
    if (this.#aborted || this.#phase === DONE) return
    this.#aborted = true
    this.#reason = reason ?? new errors.RequestAbortedError()
    // An attempt still queued or connecting is aborted when it starts (onRequestStart).
    this.#attempt?.abort(this.#reason)
    this.#finish(this.#reason)
  }

  pause (): void { this.#attempt?.pause() }
  resume (): void { this.#attempt?.resume() }

  /** Hands the caller its controller, then sends the first attempt; returns the pool's backpressure signal. */
  start (): boolean {
    try {
      this.#handler.onRequestStart?.(this, null)
    } catch (err) {
      // As undici does with a throwing handler: the request fails with that error.
      this.#finish(err as Error)
      return false
    }
    return this.#next()
  }

  /** Sends an attempt to the next instance. Never throws: every failure ends in a retry or #finish. */
  #next (): boolean {
    if (this.#phase === DONE) return false
    const { table, protocol } = this.#route
    const retries = this.#retries
    const entry = retries === undefined ? table.pick() : table.pickExcept(retries.tried)
    if (entry === undefined) {
      // After a failure past the connect, nobody else to try: the caller gets that failure itself.
      this.#finish(retries?.lostAfterSend === true ? retries.lastError as Error : table.noInstance(retries?.lastError, retries?.tried.length ?? 0))
      return false
    }
    this.#entry = entry
    this.#phase = PICKING
    this.#attempt = null
    let pool: Dispatcher
    try {
      pool = entry.pool(protocol, this.#ctx.onDrain)
    } catch (err) {
      // A pool that cannot be built: nothing was sent, so like a failed connect (ejects, tries another).
      this.#notSent(entry, err as Error, true)
      return false
    }
    try {
      return pool.dispatch(this.#opts, this)
    } catch (err) {
      // undici reports through onResponseError; only a custom factory's dispatcher throws.
      if (this.#entry === entry && this.#phase === PICKING) this.#notSent(entry, err as Error, true)
      else this.#finish(err as Error)
      return false
    }
  }

  onRequestStart (controller: DispatchController, _context: unknown): void {
    if (this.#phase === DONE) { controller.abort(this.#reason ?? new errors.RequestAbortedError()); return }
    this.#phase = SENT
    this.#attempt = controller
    this.#entry!.connected()
  }

  onRequestUpgrade (_controller: DispatchController, statusCode: number, headers: IncomingHttpHeaders, socket: Duplex): void {
    if (this.#phase === DONE) { socket.destroy(); return }
    this.#phase = DONE
    this.#handler.onRequestUpgrade?.(this, statusCode, headers, socket)
  }

  onResponseStarted (): void {
    if (this.#phase !== DONE) this.#handler.onResponseStarted?.()
  }

  onResponseStart (_controller: DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    if (this.#phase === DONE) return
    this.#phase = RESPONDED
    const state = headers[STATE_HEADER]
    if (state !== undefined) this.#route.table.observeState(this.#entry!, state)
    this.#handler.onResponseStart?.(this, statusCode, headers, statusMessage)
  }

  onResponseData (_controller: DispatchController, chunk: Buffer): void {
    if (this.#phase !== DONE) this.#handler.onResponseData?.(this, chunk)
  }

  onResponseEnd (_controller: DispatchController, trailers: IncomingHttpHeaders): void {
    if (this.#phase === DONE) return
    this.#phase = DONE
    this.#handler.onResponseEnd?.(this, trailers)
  }

  onBodySent (chunk: Buffer): void {
    if (this.#phase !== DONE) this.#handler.onBodySent?.(chunk)
  }

  onRequestSent (): void {
    if (this.#phase !== DONE) this.#handler.onRequestSent?.()
  }

  onResponseError (_controller: DispatchController | null, err: Error): void {
    const phase = this.#phase
    if (phase === DONE) return
    this.#attempt = null
    const entry = this.#entry
    const code = (err as { code?: unknown } | null)?.code
    if (entry !== undefined && !this.#aborted && !this.#ctx.closed && typeof code === 'string') {
      if (phase === PICKING && NOT_SENT.has(code)) { this.#notSent(entry, err, CONNECT_ERRORS.has(code)); return }
      if (phase === SENT && LOST_BEFORE_RESPONSE.has(code) && (this.#retries?.idempotent ?? 0) < this.#ctx.options.retryIdempotent &&
          this.#isIdempotent() && this.#retry(entry, err, true)) {
        const retries = this.#retries!
        retries.idempotent++
        retries.lostAfterSend = true
        return
      }
    }
    this.#finish(err)
  }

  /** Nothing reached `entry`: count it toward ejection when `eject`, and try another instance. */
  #notSent (entry: InstanceEntry, err: Error, eject: boolean): void {
    const table = this.#route.table
    if (eject) table.connectFailed(entry, err)
    const allowed = (this.#retries?.connect ?? 0) < this.#ctx.options.maxConnectRetries
    const retried = this.#retry(entry, err, allowed)
    const retries = this.#retries!
    retries.lostAfterSend = false
    if (retried) { retries.connect++; return }
    this.#finish(table.noInstance(err, retries.tried.length))
  }

  #isIdempotent (): boolean {
    const opts = this.#opts
    if (opts.upgrade || opts.idempotent === false || !replayable(opts.body)) return false
    return opts.idempotent === true || IDEMPOTENT.has(opts.method)
  }

  /** Queues another attempt that avoids `entry`; false when `allowed` is false. */
  #retry (entry: InstanceEntry, err: unknown, allowed: boolean): boolean {
    const retries = this.#retries ??= { tried: [], lastError: undefined, lostAfterSend: false, connect: 0, idempotent: 0 }
    retries.tried.push(entry)
    retries.lastError = err
    if (!allowed) return false
    // Not from inside the failing pool's error path: a microtask later.
    queueMicrotask(() => {
      if (this.#phase === DONE) return
      if (this.#ctx.closed) this.#finish(new errors.ClientClosedError())
      else this.#next()
    })
    return true
  }

  #finish (err: Error): void {
    if (this.#phase === DONE) return
    this.#phase = DONE
    this.#handler.onResponseError?.(this, err)
  }
}
