import { Metadata, ServerInterceptingCall, type Responder, type ServerInterceptingCallInterface, type ServerInterceptor, type ServerMethodDefinition, type StatusObject } from '@grpc/grpc-js'
import { CONSUMER_HEADER, STATE_HEADER, type ConsumerTracker, type InFlightTracker } from '@lameduck/core'
import { HEALTH_SERVICE } from './health-codec.ts'

/** A call in flight: what names it when a bound cuts it. */
interface OpenCall {
  path: string
  kind: CallKind
  at: number
  call: ServerInterceptingCallInterface
}

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
 * What of grpc-js's own call object the interceptor reads (1.10–1.14): the HTTP/2
 * stream a call runs on and its parsed metadata. An interceptor gets either that
 * base call or another interceptor's wrapper of it (nextCall).
 */
interface BaseCallLike { stream: { on(event: 'close', listener: () => void): unknown }, metadata: Metadata }

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
 * status only). A call that began before the drain answers unmarked: the next
 * one is told. The consumer id in the call's metadata feeds earlyOffline, as on
 * HTTP. The health service's own calls are neither counted nor tracked: they are probes.
 */
export class CallTable {
  readonly #inflight: InFlightTracker
  readonly #tracker: ConsumerTracker | undefined
  readonly #open = new Map<object, OpenCall>()
  /** One listener for every stream's 'close' (`this` is the stream): no closure per call. */
  readonly #onStreamClose: (this: object) => void
  /** The responder of a marked call, shared: it reads the state when the call answers. */
  readonly #marker: Responder
  #streams = 0
  /** The state to announce (draining, offline, ...), or null while serving. */
  marking: string | null = null

  constructor (inflight: InFlightTracker, tracker: ConsumerTracker | undefined) {
    this.#inflight = inflight
    this.#tracker = tracker
    const end = (stream: object): void => { this.#end(stream) }
    this.#onStreamClose = function (this: object) { end(this) }
    this.#marker = {
      sendMetadata: (metadata, next) => { next(this.marking === null ? metadata : withState(metadata, this.marking)) },
      sendStatus: (status, next) => { next(this.marking === null ? status : { ...status, metadata: withState(status.metadata, this.marking) } as StatusObject) }
    }
  }

  /** Open calls that stream responses (server streaming and bidi): what 'goingAway' asks the app to end. */
  get streams (): number { return this.#streams }

  /** Open calls, oldest first. */
  list (): Array<{ path: string, kind: CallKind, at: number, peer: string }> {
    return [...this.#open.values()].sort((a, b) => a.at - b.at).map((c) => ({ path: c.path, kind: c.kind, at: c.at, peer: c.call.getPeer() }))
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

  #intercept (method: ServerMethodDefinition<unknown, unknown>, call: ServerInterceptingCallInterface): ServerInterceptingCall {
    const base = baseOf(call)
    if (base === null) return this.#wrapped(method, call)
    const open: OpenCall = { path: method.path, kind: kindOf(method), at: Date.now(), call }
    this.#begin(base.stream, open)
    base.stream.on('close', this.#onStreamClose)
    if (this.#tracker !== undefined) this.#seen(base.metadata, open.at)
    return this.marking === null ? call as ServerInterceptingCall : this.#marked(call)
  }

  /** The response's metadata carries the state: headers, and the trailers of a status-only answer. */
  #marked (call: ServerInterceptingCallInterface): ServerInterceptingCall {
    return new ServerInterceptingCall(call, this.#marker)
  }

  /**
   * A call whose stream the interceptor cannot reach (a grpc-js that changed its call
   * object): counted through a wrapper instead, which sees its end as onCancel.
   */
  #wrapped (method: ServerMethodDefinition<unknown, unknown>, call: ServerInterceptingCallInterface): ServerInterceptingCall {
    const key = {}
    const open: OpenCall = { path: method.path, kind: kindOf(method), at: Date.now(), call }
    this.#begin(key, open)
    return new ServerInterceptingCall(call, {
      ...this.#marker,
      start: (next) => {
        next({
          onReceiveMetadata: (metadata, next) => { this.#seen(metadata, open.at); next(metadata) },
          onCancel: () => { this.#end(key) }
        })
      }
    })
  }

  #begin (key: object, open: OpenCall): void {
    this.#inflight.start()
    this.#open.set(key, open)
    if (open.kind === 'server streaming' || open.kind === 'bidi') this.#streams++
  }

  #end (key: object): void {
    const open = this.#open.get(key)
    if (open === undefined) return
    this.#open.delete(key)
    if (open.kind === 'server streaming' || open.kind === 'bidi') this.#streams--
    this.#inflight.end()
  }

  #seen (metadata: Metadata, at: number): void {
    const tracker = this.#tracker
    if (tracker === undefined) return
    const id = consumerId(metadata)
    tracker.seen(id, at)
    if (this.marking !== null) tracker.told(id, at)
  }
}
