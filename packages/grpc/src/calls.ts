import type { Http2SecureServer, Http2Server, IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2'
import { Metadata, ServerInterceptingCall, type ServerInterceptor, type StatusObject } from '@grpc/grpc-js'
import { CONSUMER_HEADER, STATE_HEADER, type ConsumerTracker, type InFlightTracker } from '@lameduck/core'
import { COARSE_MS, coarseNow } from '@lameduck/node/engine'
import { HEALTH_SERVICE } from './health-codec.ts'

export type CallKind = 'unary' | 'client streaming' | 'server streaming' | 'bidi'

const HEALTH_PREFIX = `/${HEALTH_SERVICE}/`
const KINDS: Record<string, CallKind> = { unary: 'unary', clientStream: 'client streaming', serverStream: 'server streaming', bidi: 'bidi' }

/** The stream's slot in the open-call table. */
const kSlot = Symbol('lameduck.grpc.slot')
type Stream = ServerHttp2Stream & { [kSlot]?: number }

function withState (metadata: Metadata | null | undefined, state: string): Metadata {
  const copy = metadata == null ? new Metadata() : metadata.clone()
  copy.set(STATE_HEADER, state)
  return copy
}

/**
 * The calls in flight, of every kind (unary, client, server and bidi
 * streaming). Each gRPC call is one HTTP/2 stream of the server's own HTTP/2
 * servers: it counts from the stream's arrival (a listener ahead of grpc-js's)
 * until it closes, in a slot table (a few array writes per call, one shared
 * 'close' listener, the consumer id read from the stream's headers). While
 * leaving, a server interceptor puts the lifecycle state in every response's
 * metadata (headers, and trailers); while serving it hands each call on
 * untouched, so grpc-js builds no extra interceptor layer per call. The health
 * service's calls are neither counted nor tracked: they are probes.
 */
export class CallTable {
  readonly #inflight: InFlightTracker
  readonly #tracker: ConsumerTracker | undefined
  readonly #kindOf: (path: string) => CallKind
  readonly #paths: Array<string | undefined> = []
  readonly #streams: Array<Stream | undefined> = []
  readonly #startedAt: number[] = []
  readonly #free: number[] = []
  readonly #hooked = new Set<Http2Server | Http2SecureServer>()
  /** The state to announce (draining, offline, ...), or null while serving. */
  marking: string | null = null
  readonly #onStream: (stream: Stream, headers: IncomingHttpHeaders) => void
  readonly #end: (this: Stream) => void

  /** `kindOf` names a method's kind from its path (grpc-js's handler type). */
  constructor (inflight: InFlightTracker, tracker: ConsumerTracker | undefined, kindOf: (path: string) => CallKind) {
    this.#inflight = inflight
    this.#tracker = tracker
    this.#kindOf = kindOf
    this.#onStream = (stream, headers) => { this.#begin(stream, headers) }
    const table = this
    this.#end = function endCall (this: Stream): void { table.#finish(this) }
  }

  /** Counts the calls of `h2` (each HTTP/2 server under the gRPC server; once each). Returns the remover. */
  hook (h2: Http2Server | Http2SecureServer): (() => void) | null {
    if (this.#hooked.has(h2)) return null
    this.#hooked.add(h2)
    h2.prependListener('stream', this.#onStream)
    return () => { h2.off('stream', this.#onStream); this.#hooked.delete(h2) }
  }

  #begin (stream: Stream, headers: IncomingHttpHeaders): void {
    const path = headers[':path']
    if (typeof path !== 'string' || path.startsWith(HEALTH_PREFIX)) return
    const at = coarseNow()
    this.#inflight.start()
    const slot = this.#free.length > 0 ? this.#free.pop()! : this.#paths.length
    this.#paths[slot] = path
    this.#streams[slot] = stream
    this.#startedAt[slot] = at
    stream[kSlot] = slot
    stream.on('close', this.#end)
    const tracker = this.#tracker
    if (tracker === undefined) return
    // Sent twice, Node joins the values with ', ': no id, as on HTTP. The coarse clock runs up to
    // COARSE_MS behind: a stamp from its far end errs towards the full window.
    const v = headers[CONSUMER_HEADER]
    const id = typeof v === 'string' ? v : undefined
    tracker.seen(id, at + COARSE_MS)
    if (this.marking !== null) tracker.told(id, at + COARSE_MS)
  }

  #finish (stream: Stream): void {
    const slot = stream[kSlot]
    if (slot === undefined || this.#streams[slot] !== stream) return
    this.#paths[slot] = undefined
    this.#streams[slot] = undefined
    this.#free.push(slot)
    this.#inflight.end()
  }

  /** Open calls that stream responses (server streaming and bidi): what 'goingAway' asks the app to end. */
  get streams (): number {
    let n = 0
    for (const path of this.#paths) if (path !== undefined && this.#longLived(path)) n++
    return n
  }

  #longLived (path: string): boolean {
    const kind = this.#kindOf(path)
    return kind === 'server streaming' || kind === 'bidi'
  }

  /** Open calls, oldest first. */
  list (): Array<{ path: string, kind: CallKind, at: number, peer: string }> {
    const out: Array<{ path: string, kind: CallKind, at: number, peer: string }> = []
    for (let i = 0; i < this.#paths.length; i++) {
      const path = this.#paths[i]
      if (path === undefined) continue
      const socket = this.#streams[i]!.session?.socket
      out.push({ path, kind: this.#kindOf(path), at: this.#startedAt[i]!, peer: socket?.remoteAddress === undefined ? 'unknown' : `${socket.remoteAddress}:${socket.remotePort}` })
    }
    return out.sort((a, b) => a.at - b.at)
  }

  /** Names the calls in flight (method, kind, peer, age), e.g. for what a bound cut. */
  describe (limit = 10): string {
    const now = Date.now()
    const list = this.list()
    const shown = list.slice(0, limit).map((c) => `${c.path} (${c.kind}, peer ${c.peer}, open ${now - c.at} ms)`)
    return shown.join(', ') + (list.length > limit ? `, and ${list.length - limit} more` : '')
  }

  /** The interceptor to install on the server: it marks responses while leaving, and does nothing else. */
  interceptor (): ServerInterceptor {
    return (method, call) => {
      const marking = this.marking
      if (marking === null || method.path.startsWith(HEALTH_PREFIX)) return call as ServerInterceptingCall
      return new ServerInterceptingCall(call, {
        sendMetadata: (metadata, next) => { next(withState(metadata, marking)) },
        sendStatus: (status, next) => { next({ ...status, metadata: withState(status.metadata, marking) } as StatusObject) }
      })
    }
  }
}

export { KINDS }
