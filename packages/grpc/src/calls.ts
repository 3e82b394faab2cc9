import { Metadata, ServerInterceptingCall, type Responder, type ServerInterceptingCallInterface, type ServerInterceptor, type ServerMethodDefinition, type StatusObject } from '@grpc/grpc-js'
import { CONSUMER_HEADER, STATE_HEADER, type ConsumerTracker, type InFlightTracker } from '@lameduck/core'
import { COARSE_MS, coarseNow, OpenRequests } from '@lameduck/node/engine'
import { HEALTH_SERVICE } from './health-codec.ts'

export type CallKind = 'unary' | 'client streaming' | 'server streaming' | 'bidi'

const HEALTH_PREFIX = `/${HEALTH_SERVICE}/`

function kindOf (method: ServerMethodDefinition<unknown, unknown>): CallKind {
  if (method.requestStream) return method.responseStream ? 'bidi' : 'client streaming'
  return method.responseStream ? 'server streaming' : 'unary'
}

/**
 * The consumer id in call metadata. Sent twice, it counts as no id (as on
 * HTTP); a binary value never is one (the tracker takes visible ASCII only).
 */
function consumerId (metadata: Metadata): string | undefined {
  const values = metadata.get(CONSUMER_HEADER)
  return values.length === 1 && typeof values[0] === 'string' ? values[0] : undefined
}

function withState (metadata: Metadata | null | undefined, state: string): Metadata {
  const copy = metadata == null ? new Metadata() : metadata.clone()
  copy.set(STATE_HEADER, state)
  return copy
}

/**
 * What of grpc-js's own call object the interceptor reads (1.10-1.14): the HTTP/2
 * stream a call runs on and its parsed metadata. An interceptor gets either that
 * base call or another interceptor's wrapper of it (nextCall).
 */
interface BaseCallLike { stream: Keyed & { on(event: 'close', listener: () => void): unknown }, metadata: Metadata }

/** The call's slot in the open-call table, on what ends it (its HTTP/2 stream), once it has a listener: no closure per call. */
const kSlot = Symbol('lameduck.grpc.slot')
interface Keyed { [kSlot]?: number, destroyed?: boolean, on?: (event: 'close', listener: () => void) => unknown }

/**
 * Whether a call counted without a listener is done: its HTTP/2 stream is
 * destroyed once it closed (a status sent or a cancellation). One with a listener
 * (a slot on its stream) is ended by that listener alone.
 */
function sweptEnded (_method: Method, key: Keyed): boolean {
  return key[kSlot] === undefined && key.destroyed === true
}
type Method = ServerMethodDefinition<unknown, unknown>

function baseOf (call: ServerInterceptingCallInterface): BaseCallLike | null {
  let c = call as unknown as { stream?: unknown, metadata?: unknown, nextCall?: unknown }
  for (let depth = 0; depth < 32; depth++) {
    if (c.metadata instanceof Metadata && typeof (c.stream as { on?: unknown } | undefined)?.on === 'function') return c as BaseCallLike
    if (typeof c.nextCall !== 'object' || c.nextCall === null) return null
    c = c.nextCall as typeof c
  }
  return null
}

/**
 * The calls in flight, counted by a server interceptor around every call kind
 * (unary, client, server and bidi streaming). A call counts from the moment
 * grpc-js hands it to the interceptors until its HTTP/2 stream closes (a status
 * sent or a cancellation: grpc-js's own end of a call). The interceptor only
 * reads the call while serving (its stream and metadata: no wrapper, so no
 * per-message cost); while draining it wraps the call so the response's metadata
 * carries the lifecycle state (headers, and trailers for a call answered with a
 * status only). While serving, a call is counted without a listener on its stream
 * (as attach() counts HTTP/1 requests): the table is swept for destroyed streams
 * when it fills and before a count is read, and the drain gives each open call
 * its 'close' listener as it starts. A call that began before the drain answers unmarked: the next
 * one is told. The consumer id in the call's metadata feeds earlyOffline, as on
 * HTTP. The health service's own calls are neither counted nor tracked: they are probes.
 *
 * The table is the engine's slot table (as attach()'s requests): a Map and an
 * entry object per call were most of the interceptor's allocation.
 */
export class CallTable {
  readonly #inflight: InFlightTracker
  readonly #tracker: ConsumerTracker | undefined
  /** The call (for its peer), its method (path and kind) and what ends it. */
  readonly #open: OpenRequests<ServerInterceptingCallInterface, Method, Keyed>
  /** The 'close' listeners (`this` is the stream), one for calls that stream responses (counted in `streams`). */
  readonly #onClose: (this: Keyed) => void
  readonly #onStreamingClose: (this: Keyed) => void
  /** The responder of a marked call, shared: it reads the state when the call answers. */
  readonly #marker: Responder
  /** Ends the calls counted without a listener whose stream is done. */
  readonly #sweep: () => void
  #streams = 0
  #marking: string | null = null

  constructor (inflight: InFlightTracker, tracker: ConsumerTracker | undefined) {
    this.#inflight = inflight
    this.#tracker = tracker
    const table = this
    const open = this.#open = new OpenRequests<ServerInterceptingCallInterface, Method, Keyed>({
      ended: sweptEnded,
      onEnd: (_key, method) => {
        if (method.responseStream) table.#streams--
        inflight.end()
      }
    })
    this.#onClose = function (this: Keyed) { if (open.end(this[kSlot]!) !== undefined) inflight.end() }
    this.#onStreamingClose = function (this: Keyed) {
      if (open.end(this[kSlot]!) === undefined) return
      table.#streams--
      inflight.end()
    }
    this.#marker = {
      sendMetadata: (metadata, next) => { next(this.#marking === null ? metadata : withState(metadata, this.#marking)) },
      sendStatus: (status, next) => { next(this.#marking === null ? status : { ...status, metadata: withState(status.metadata, this.#marking) } as StatusObject) }
    }
    this.#sweep = () => { open.sweep() }
    inflight.settleWith(this.#sweep)
  }

  /** The state to announce (draining, offline, ...), or null while serving. */
  get marking (): string | null { return this.#marking }

  /**
   * Sets the state to announce. Leaving serving, every call counted without a
   * listener gets one: the drain waits for its end, and 'goingAway' counts its stream.
   */
  mark (state: string | null): void {
    const was = this.#marking
    this.#marking = state
    if (state === null || was !== null) return
    this.#sweep()
    this.#open.forEach((_call, method, key, _stamp, _at, slot) => {
      if (key[kSlot] !== undefined) return
      key[kSlot] = slot
      key.on!('close', method.responseStream ? this.#onStreamingClose : this.#onClose)
    })
  }

  /** Open calls that stream responses (server streaming and bidi): what 'goingAway' asks the app to end. */
  get streams (): number {
    this.#sweep()
    return this.#streams
  }

  /** Open calls, oldest first. */
  list (): Array<{ path: string, kind: CallKind, at: number, peer: string }> {
    this.#sweep()
    const out: Array<{ path: string, kind: CallKind, at: number, peer: string }> = []
    this.#open.forEach((call, method, _key, _stamp, at) => { out.push({ path: method.path, kind: kindOf(method), at, peer: call.getPeer() }) })
    return out.sort((a, b) => a.at - b.at)
  }

  /** Names the calls in flight (method, kind, peer, age), e.g. for what a bound cut. */
  describe (limit = 10): string {
    const now = Date.now()
    const list = this.list()
    const shown = list.slice(0, limit).map((c) => `${c.path} (${c.kind}, peer ${c.peer}, open ${now - c.at} ms)`)
    return shown.join(', ') + (list.length > limit ? `, and ${list.length - limit} more` : '')
  }

  /** The interceptor to install on the server. */
  interceptor (): ServerInterceptor {
    return (method, call) => {
      if (method.path.startsWith(HEALTH_PREFIX)) return call as ServerInterceptingCall
      return this.#intercept(method, call)
    }
  }

  #intercept (method: Method, call: ServerInterceptingCallInterface): ServerInterceptingCall {
    const base = baseOf(call)
    if (base === null) return this.#wrapped(method, call)
    const stream = base.stream
    const marking = this.#marking
    if (marking === null) {
      const at = this.#count(method, call, stream)
      if (this.#tracker !== undefined) this.#seen(base.metadata, at)
      return call as ServerInterceptingCall
    }
    const at = this.#begin(method, call, stream)
    stream.on('close', method.responseStream ? this.#onStreamingClose : this.#onClose)
    if (this.#tracker !== undefined) this.#seen(base.metadata, at)
    return this.#marked(call)
  }

  /** The response's metadata carries the state: headers, and the trailers of a status-only answer. */
  #marked (call: ServerInterceptingCallInterface): ServerInterceptingCall {
    return new ServerInterceptingCall(call, this.#marker)
  }

  /**
   * A call whose stream the interceptor cannot reach (a grpc-js that changed its call
   * object): counted through a wrapper instead, which sees its end as onCancel.
   */
  #wrapped (method: Method, call: ServerInterceptingCallInterface): ServerInterceptingCall {
    const key: Keyed = {}
    const at = this.#begin(method, call, key)
    const end = method.responseStream ? this.#onStreamingClose : this.#onClose
    return new ServerInterceptingCall(call, {
      ...this.#marker,
      start: (next) => {
        next({
          onReceiveMetadata: (metadata, next) => { this.#seen(metadata, at); next(metadata) },
          onCancel: () => { end.call(key) }
        })
      }
    })
  }

  /** Counts a call in flight until `key` ends it (through its listener); returns its (coarse) start time. */
  #begin (method: Method, call: ServerInterceptingCallInterface, key: Keyed): number {
    const at = coarseNow()
    this.#inflight.start()
    key[kSlot] = this.#open.start(call, method, key, at, 0)
    if (method.responseStream) this.#streams++
    return at
  }

  /** Counts a call in flight until a sweep finds its stream destroyed: nothing written on the stream. */
  #count (method: Method, call: ServerInterceptingCallInterface, stream: Keyed): number {
    const at = coarseNow()
    this.#inflight.start()
    this.#open.counted(call, method, stream, at, 0)
    if (method.responseStream) this.#streams++
    return at
  }

  #seen (metadata: Metadata, at: number): void {
    const tracker = this.#tracker
    if (tracker === undefined) return
    const id = consumerId(metadata)
    // The coarse clock runs up to COARSE_MS behind: its far end errs towards the full window (as on HTTP).
    const stamp = at + COARSE_MS
    tracker.seen(id, stamp)
    if (this.#marking !== null) tracker.told(id, stamp)
  }
}
