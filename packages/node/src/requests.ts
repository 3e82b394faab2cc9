import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Http2ServerRequest, Http2ServerResponse, IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2'
import { CONSUMER_HEADER, STATE_HEADER, type ConsumerTracker, type InFlightTracker } from '@lameduck/core'
import { kBusy, kUsed } from './idle-sweeper.ts'
import type { Connection } from './connections.ts'
import { writeProbe, writeStreamProbe, type ProbeAnswer, type ProbeKind } from './probes.ts'
import { OpenRequests } from './open-requests.ts'
import { closeAfter, goAway, markStream } from './drain-marks.ts'
import { COARSE_MS, coarseNow } from './coarse-clock.ts'
import { isPath } from './url-path.ts'

type Req = IncomingMessage | Http2ServerRequest
type Res = ServerResponse | Http2ServerResponse

export interface RequestHookContext {
  inflight: InFlightTracker
  tracker: ConsumerTracker | undefined
  routes: { ready: string, live: string } | false
  /** Answer the probe routes here (false: the framework serves them). */
  serveRoutes: boolean
  probe: (kind: ProbeKind) => ProbeAnswer
}

/** onRequest's verdicts: pass the request on now, it was answered (a probe route), or pass it on after this read. */
export const PASS = 0
export const ANSWERED = 1
export const DEFER = 2
type Verdict = typeof PASS | typeof ANSWERED | typeof DEFER

/** The response's slot in OpenRequests. */
const kSlot = Symbol('lameduck.slot')

/** A request in the open-request table: the compat request, or a raw stream's headers (`:method`, `:path`). */
export type OpenRequest = Req | IncomingHttpHeaders
/** A request object, not a raw stream's headers (whose keys are lowercase header names). */
export function isRequest (r: OpenRequest): r is Req {
  return typeof (r as Req).httpVersionMajor === 'number'
}
/** What carries a request's end ('close'): the response, or a raw HTTP/2 stream. */
type Carrier = (Res | ServerHttp2Stream) & { [kSlot]?: number }

/** The connection a request travels on: the HTTP/2 session, or the HTTP/1 socket (TLS or plain). */
function connectionOf (req: Req): Connection {
  return (req.httpVersionMajor === 2 ? (req as Http2ServerRequest).stream.session : req.socket) as Connection
}

/**
 * The consumer id header of a request, read from rawHeaders on HTTP/1:
 * `req.headers` is built on first use, and an app that never reads it should not
 * pay for it here. Sent twice, it counts as no id, as `req.headers` would join
 * the two into a value that is not an id.
 */
function consumerId (req: Req): string | undefined {
  if (req.httpVersionMajor === 2) return headerId(req.headers)
  const raw = req.rawHeaders
  let id: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    if (name.length !== CONSUMER_HEADER.length || name.toLowerCase() !== CONSUMER_HEADER) continue
    if (id !== undefined) return undefined
    id = raw[i + 1]
  }
  return id
}

/** The consumer id in HTTP/2 headers (the stream's, or the compat request's: the same object). */
function headerId (headers: IncomingHttpHeaders): string | undefined {
  const v = headers[CONSUMER_HEADER]
  return typeof v === 'string' ? v : undefined
}

/**
 * Per-request work, kept to counters on the hot path: in-flight and the open
 * table. While serving, an HTTP/1 request is counted without a listener: the
 * table is swept for done responses (OpenRequests.counted), and the drain gives
 * each open one a 'close' listener as it starts. While leaving, also the
 * connection's busy count and stamp (symbol-keyed properties on Node's sockets,
 * so not paid while serving) and the drain marks.
 * HTTP/1 gets `connection: close` on the last request read on its socket (so
 * pipelined requests already read all get their answer); HTTP/2 gets a
 * graceful GOAWAY on its session with the response (a `connection` header is
 * invalid there).
 *
 * `onRequest` sees requests through Node's request/response API (every HTTP/1
 * server, and HTTP/2 servers with 'request' listeners). `onStream` does the same
 * for an HTTP/2 server whose app uses the stream API (`server.on('stream')`) and
 * so never sees a 'request'.
 */
export class RequestHook {
  #marking: string | null = null
  readonly #open: OpenRequests<OpenRequest, Carrier, Connection>
  readonly #ctx: RequestHookContext
  readonly #probePaths: { ready: string, live: string } | null
  readonly #tracker: ConsumerTracker | undefined
  /** The probe routes: not consumer traffic, so not tracked (null: no such route). */
  readonly #readyPath: string | null
  readonly #livePath: string | null
  /** The 'close' listener of a request counted with one: one function, not a closure per request. */
  readonly #end: (this: Carrier) => void
  /** Ends the requests counted without a listener whose response is done. */
  readonly #sweep: () => void

  constructor (ctx: RequestHookContext) {
    this.#ctx = ctx
    this.#probePaths = ctx.serveRoutes && ctx.routes !== false ? ctx.routes : null
    this.#tracker = ctx.tracker
    this.#readyPath = ctx.routes === false ? null : ctx.routes.ready
    this.#livePath = ctx.routes === false ? null : ctx.routes.live
    const { inflight } = ctx
    // Only requests read while serving are swept, and the connections' busy counts leave those out.
    const open = this.#open = new OpenRequests<OpenRequest, Carrier, Connection>({ ended: sweptEnded, onEnd: () => { inflight.end() } })
    const hook = this
    this.#end = function endRequest (this: Carrier): void {
      const c = open.end(this[kSlot]!)
      if (c === undefined) return
      inflight.end()
      if (hook.#marking !== null) c[kBusy] = (c[kBusy] ?? 1) - 1
    }
    this.#sweep = () => { open.sweep() }
    inflight.settleWith(this.#sweep)
  }

  /**
   * The state to announce on responses (draining, offline, ...), or null while
   * serving. Requests that arrived before the drain and have not answered yet
   * get the mark too: their responses are the ones a consumer reads next.
   */
  mark (state: string | null): void {
    const was = this.#marking
    this.#marking = state
    if (state !== null && was === null) {
      // Requests counted without a listener while serving get one now: the drain waits for each end.
      this.#sweep()
      this.#open.forEach((_request, carrier, _c, _stamp, _at, slot) => {
        if (carrier[kSlot] !== undefined) return
        carrier[kSlot] = slot
        carrier.on('close', this.#end)
      })
      // The connections' counters are kept only while leaving (the idle sweep and the close after
      // the drain read them; serving, nothing does): taken up from the open requests here.
      this.#open.forEach((_request, _carrier, c) => { c[kBusy] = 0 })
      this.#open.forEach((_request, _carrier, c, stamp) => { c[kBusy]!++; if (stamp > (c[kUsed] ?? 0)) c[kUsed] = stamp })
      this.#open.forEach((request, carrier, c, stamp) => { markOpen(request, carrier, c, stamp, state) })
    } else if (state === null && was !== null) {
      // Back to serving (an /online after /offline): the counts stop here, and start again from the open requests.
      this.#open.forEach((_request, _carrier, c) => { c[kBusy] = 0 })
    }
  }

  /** Requests in flight now with their start time, for logs that name what a bound cut. */
  inflightRequests (): Array<[OpenRequest, number]> {
    this.#sweep()
    return this.#open.list()
  }

  onRequest (req: Req, res: Res): Verdict {
    const c = connectionOf(req)
    const marking = this.#marking
    const at = this.#begin(req, c, res, marking === null && req.httpVersionMajor !== 2)
    if (marking !== null) {
      res.setHeader(STATE_HEADER, marking)
      if (req.httpVersionMajor === 2) goAway(c, res); else closeAfter(res, c)
    }
    const url = req.url ?? ''
    if (this.#tracks(url)) this.#seen(consumerId(req), marking, at)
    const probe = this.#probeAt(req.method, url)
    if (probe !== null) { writeProbe(req, res, this.#ctx.probe(probe)); return ANSWERED }
    // While draining, an HTTP/1 handler runs once the whole read is parsed: a handler that answers
    // synchronously would otherwise decide `connection: close` before the pipelined requests after it were read.
    return marking !== null && req.httpVersionMajor !== 2 ? DEFER : PASS
  }

  onStream (stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Verdict {
    const c = stream.session as Connection
    const at = this.#begin(headers, c, stream, false)
    const marking = this.#marking
    if (marking !== null) {
      markStream(stream, marking)
      goAway(c, stream)
    }
    const url = headers[':path'] ?? ''
    if (this.#tracks(url)) this.#seen(headerId(headers), marking, at)
    const probe = this.#probeAt(headers[':method'], url)
    if (probe !== null) { writeStreamProbe(stream, headers[':method'] === 'HEAD', this.#ctx.probe(probe)); return ANSWERED }
    return PASS
  }

  /**
   * Counts a request in flight on `c` until its carrier closes; returns its (coarse) start time.
   * `lazy` (an HTTP/1 response while serving): no 'close' listener, and no property on the
   * response; a sweep ends it once the response says it is done.
   */
  #begin (request: OpenRequest, c: Connection, carrier: Carrier, lazy: boolean): number {
    const { inflight } = this.#ctx
    const open = this.#open
    const at = coarseNow()
    inflight.start()
    const stamp = inflight.total
    if (lazy) {
      open.counted(request, carrier, c, at, stamp)
      return at
    }
    carrier[kSlot] = open.start(request, carrier, c, at, stamp)
    if (this.#marking !== null) {
      // `??`: a connection accepted before attach() was never given the counters.
      c[kBusy] = (c[kBusy] ?? 0) + 1
      c[kUsed] = stamp
    }
    carrier.on('close', this.#end)
    return at
  }

  /** Whether a request for `url` is consumer traffic the tracker counts (not a probe). */
  #tracks (url: string): boolean {
    return this.#tracker !== undefined && url !== this.#readyPath && url !== this.#livePath
  }

  #seen (id: string | undefined, marking: string | null, at: number): void {
    // The coarse clock runs up to COARSE_MS behind; a stamp from its far end is never earlier than
    // the request, which errs towards the full window (a later "last seen", a later "told").
    const stamp = at + COARSE_MS
    const tracker = this.#tracker!
    tracker.seen(id, stamp)
    if (marking !== null) tracker.told(id, stamp)
  }

  /** The probe a GET or HEAD of `url` asks for, when the engine answers the probe routes. */
  #probeAt (method: string | undefined, url: string): ProbeKind | null {
    const paths = this.#probePaths
    if (paths === null || (method !== 'GET' && method !== 'HEAD')) return null
    return isPath(url, paths.ready) ? 'ready' : isPath(url, paths.live) ? 'live' : null
  }
}

/**
 * Whether a request counted without a listener is done: its HTTP/1 response is
 * `destroyed` once closed (Node sets it as it emits 'close', after the response
 * or when the connection drops) or destroyed by the app. One with a listener
 * (a slot on it) is ended by that listener alone.
 */
function sweptEnded (carrier: Carrier): boolean {
  return carrier[kSlot] === undefined && (carrier as ServerResponse).destroyed
}

/**
 * The drain mark for a request read before the drain began, if its head is not
 * written yet: the state header, and `connection: close` on HTTP/1 when it is
 * the last request read on its socket (an earlier pipelined one must leave the
 * socket open for it) or a GOAWAY on HTTP/2.
 */
function markOpen (request: OpenRequest, carrier: Carrier, c: Connection, stamp: number, state: string): void {
  if (!isRequest(request)) {
    const stream = carrier as ServerHttp2Stream
    if (!stream.headersSent) markStream(stream, state)
    goAway(c, stream)
    return
  }
  const res = carrier as Res
  if (res.headersSent) return
  res.setHeader(STATE_HEADER, state)
  if (request.httpVersionMajor === 2) goAway(c, res); else if (c[kUsed] === stamp) closeAfter(res, c)
}
