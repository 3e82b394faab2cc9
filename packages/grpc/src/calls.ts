import { Metadata, ServerInterceptingCall, type ServerInterceptingCallInterface, type ServerInterceptor, type ServerMethodDefinition, type StatusObject } from '@grpc/grpc-js'
import { CONSUMER_HEADER, STATE_HEADER, type ConsumerTracker, type InFlightTracker } from '@lameduck/core'
import { COARSE_MS, coarseNow } from '@lameduck/node/engine'
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
 * The calls in flight, counted by a server interceptor around every call kind
 * (unary, client, server and bidi streaming). A call counts from the moment
 * grpc-js hands it to the interceptors until its end reaches them (grpc-js
 * reports every end, a status sent or a cancellation, as onCancel). While
 * draining, responses carry the lifecycle state in their metadata (headers, and
 * trailers for a call that answered before the drain or with a status only), and
 * the consumer id in the call's metadata feeds earlyOffline, as on HTTP. The
 * health service's own calls are neither counted nor tracked: they are probes.
 */
export class CallTable {
  readonly #inflight: InFlightTracker
  readonly #tracker: ConsumerTracker | undefined
  readonly #open = new Set<OpenCall>()
  #streams = 0
  /** The state to announce (draining, offline, ...), or null while serving. */
  marking: string | null = null

  constructor (inflight: InFlightTracker, tracker: ConsumerTracker | undefined) {
    this.#inflight = inflight
    this.#tracker = tracker
  }

  /** Open calls that stream responses (server streaming and bidi): what 'goingAway' asks the app to end. */
  get streams (): number { return this.#streams }

  /** Open calls, oldest first. */
  list (): Array<{ path: string, kind: CallKind, at: number, peer: string }> {
    return [...this.#open].sort((a, b) => a.at - b.at).map((c) => ({ path: c.path, kind: c.kind, at: c.at, peer: c.call.getPeer() }))
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
    const open: OpenCall = { path: method.path, kind: kindOf(method), at: coarseNow(), call }
    this.#begin(open)
    let ended = false
    const end = (): void => {
      if (ended) return
      ended = true
      this.#end(open)
    }
    return new ServerInterceptingCall(call, {
      start: (next) => {
        next({
          onReceiveMetadata: (metadata, next) => { this.#seen(metadata, open.at); next(metadata) },
          onCancel: end
        })
      },
      sendMetadata: (metadata, next) => { next(this.marking === null ? metadata : withState(metadata, this.marking)) },
      sendStatus: (status, next) => { next(this.marking === null ? status : { ...status, metadata: withState(status.metadata, this.marking) } as StatusObject) }
    })
  }

  #begin (open: OpenCall): void {
    this.#inflight.start()
    this.#open.add(open)
    if (open.kind === 'server streaming' || open.kind === 'bidi') this.#streams++
  }

  #end (open: OpenCall): void {
    if (!this.#open.delete(open)) return
    if (open.kind === 'server streaming' || open.kind === 'bidi') this.#streams--
    this.#inflight.end()
  }

  #seen (metadata: Metadata, at: number): void {
    const tracker = this.#tracker
    if (tracker === undefined) return
    // The coarse clock runs up to COARSE_MS behind: a stamp from its far end errs towards the full window.
    const stamp = at + COARSE_MS
    const id = consumerId(metadata)
    tracker.seen(id, stamp)
    if (this.marking !== null) tracker.told(id, stamp)
  }
}
