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

/** What a request handler needs from its balancer. */
export interface HandlerContext {
  readonly options: ResolvedOptions
  readonly closed: boolean
  readonly onDrain: (origin: URL) => void
}

/**
 * The controller the caller's handler sees. It stays the same across attempts and
 * forwards to the current attempt's controller, so an abort or pause always reaches
 * the request that is actually running.
 */
class AttemptController implements DispatchController {
  #current: DispatchController | null = null
  #aborted = false
  #reason: Error | null = null

  get aborted (): boolean { return this.#aborted || (this.#current?.aborted ?? false) }
  get paused (): boolean { return this.#current?.paused ?? false }
  get reason (): Error | null { return this.#reason ?? this.#current?.reason ?? null }
  get rawHeaders (): DispatchController['rawHeaders'] { return this.#current?.rawHeaders }
  get rawTrailers (): DispatchController['rawTrailers'] { return this.#current?.rawTrailers }
  get abortedByCaller (): boolean { return this.#aborted }

  /** Returns false when the caller aborted before this attempt started. */
  attach (controller: DispatchController): boolean {
    this.#current = controller
    if (this.#aborted) { controller.abort(this.#reason ?? new errors.RequestAbortedError()); return false }
    return true
  }

  abort (reason: Error): void {
    if (this.#aborted) return
    this.#aborted = true
    this.#reason = reason
    this.#current?.abort(reason)
  }

  pause (): void { this.#current?.pause() }
  resume (): void { this.#current?.resume() }
}

function replayable (body: Dispatcher.DispatchOptions['body']): boolean {
  return body === null || body === undefined || typeof body === 'string' || body instanceof Uint8Array
}

/**
 * One request through the balancer: picks an instance, sends the request to its
 * pool, and decides what a failure means. A failure before the request reached a
 * socket (nothing sent) goes to another instance, for any method. Afterwards only
 * idempotent requests with a replayable body, and only when `retryIdempotent` allows.
 */
export class BalancedHandler implements Dispatcher.DispatchHandler {
  readonly #ctx: HandlerContext
  readonly #table: ServiceTable
  readonly #protocol: string
  readonly #opts: Dispatcher.DispatchOptions
  readonly #handler: Dispatcher.DispatchHandler
  readonly #controller = new AttemptController()
  #entry: InstanceEntry | undefined
  #tried: InstanceEntry[] | undefined
  #lastError: unknown
  #lostAfterSend = false
  #connectRetries = 0
  #idempotentRetries = 0
  #started = false
  #announced = false
  #responded = false
  #done = false

  constructor (ctx: HandlerContext, table: ServiceTable, protocol: string, opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) {
    this.#ctx = ctx
    this.#table = table
    this.#protocol = protocol
    this.#opts = opts
    this.#handler = handler
  }

  /** Sends an attempt to the next instance (first try or retry); returns the pool's backpressure signal. */
  start (): boolean {
    const table = this.#table
    const entry = this.#tried === undefined ? table.pick() : table.pickExcept(this.#tried)
    if (entry === undefined) {
      // After a failure past the connect, nobody else to try: the caller gets that failure itself.
      this.#finish(this.#lostAfterSend ? this.#lastError as Error : table.noInstance(this.#lastError, this.#tried?.length ?? 0))
      return false
    }
    this.#entry = entry
    this.#started = false
    return entry.pool(this.#protocol, this.#ctx.onDrain).dispatch(this.#opts, this)
  }

  onRequestStart (controller: DispatchController, context: unknown): void {
    this.#started = true
    this.#entry!.connected()
    if (!this.#controller.attach(controller)) return
    if (this.#announced) return
    this.#announced = true
    this.#handler.onRequestStart?.(this.#controller, context)
  }

  onRequestUpgrade (_controller: DispatchController, statusCode: number, headers: IncomingHttpHeaders, socket: Duplex): void {
    this.#responded = true
    this.#done = true
    this.#handler.onRequestUpgrade?.(this.#controller, statusCode, headers, socket)
  }

  onResponseStarted (): void {
    this.#handler.onResponseStarted?.()
  }

  onResponseStart (_controller: DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    this.#responded = true
    const state = headers[STATE_HEADER]
    if (state !== undefined) this.#table.observeState(this.#entry!, state)
    this.#handler.onResponseStart?.(this.#controller, statusCode, headers, statusMessage)
  }

  onResponseData (_controller: DispatchController, chunk: Buffer): void {
    this.#handler.onResponseData?.(this.#controller, chunk)
  }

  onResponseEnd (_controller: DispatchController, trailers: IncomingHttpHeaders): void {
    this.#done = true
    this.#handler.onResponseEnd?.(this.#controller, trailers)
  }

  onBodySent (chunk: Buffer): void {
    this.#handler.onBodySent?.(chunk)
  }

  onRequestSent (): void {
    this.#handler.onRequestSent?.()
  }

  onResponseError (_controller: DispatchController | null, err: Error): void {
    if (this.#done) return
    const entry = this.#entry
    const code = (err as { code?: unknown } | null)?.code
    if (entry !== undefined && !this.#controller.abortedByCaller && !this.#ctx.closed && typeof code === 'string') {
      if (!this.#started && NOT_SENT.has(code)) {
        if (CONNECT_ERRORS.has(code)) this.#table.connectFailed(entry, err)
        this.#lostAfterSend = false
        if (this.#retry(entry, err, this.#connectRetries < this.#ctx.options.maxConnectRetries)) { this.#connectRetries++; return }
        this.#finish(this.#table.noInstance(err, this.#tried!.length))
        return
      }
      if (this.#started && !this.#responded && LOST_BEFORE_RESPONSE.has(code) && this.#idempotentRetries < this.#ctx.options.retryIdempotent &&
          this.#isIdempotent() && this.#retry(entry, err, true)) {
        this.#idempotentRetries++
        this.#lostAfterSend = true
        return
      }
    }
    this.#finish(err)
  }

  #isIdempotent (): boolean {
    const opts = this.#opts
    if (opts.upgrade || opts.idempotent === false || !replayable(opts.body)) return false
    return opts.idempotent === true || IDEMPOTENT.has(opts.method)
  }

  /** Queues another attempt that avoids `entry`; false when `allowed` is false. */
  #retry (entry: InstanceEntry, err: unknown, allowed: boolean): boolean {
    (this.#tried ??= []).push(entry)
    this.#lastError = err
    if (!allowed) return false
    // Not from inside the failing pool's error path: a microtask later.
    queueMicrotask(() => {
      if (this.#done) return
      if (this.#controller.abortedByCaller) this.#finish(this.#controller.reason ?? new errors.RequestAbortedError())
      else if (this.#ctx.closed) this.#finish(new errors.ClientClosedError())
      else this.start()
    })
    return true
  }

  #finish (err: Error): void {
    if (this.#done) return
    this.#done = true
    this.#handler.onResponseError?.(this.#announced ? this.#controller : (null as unknown as DispatchController), err)
  }
}
