import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2'
import { CONSUMER_HEADER, STATE_HEADER, type ConsumerTracker, type InFlightTracker } from '@lameduck/core'
import { kBusy, kUsed } from './idle-sweeper.ts'
import type { Connection } from './connections.ts'
import { writeProbe, type ProbeAnswer, type ProbeKind } from './probes.ts'
import { OpenRequests } from './open-requests.ts'
import { closeAfter, goAway } from './drain-marks.ts'

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

export interface RequestHook {
  onRequest(req: Req, res: Res): Verdict
  /** The state to announce on responses (draining, offline, ...), or null while serving. */
  mark(state: string | null): void
  /** Requests in flight now with their start time, for logs that name what a bound cut. */
  inflightRequests(): Array<[Req, number]>
}

/** The response's slot in OpenRequests. */
const kSlot = Symbol('lameduck.slot')

/** The connection a request travels on: the HTTP/2 session, or the HTTP/1 socket (TLS or plain). */
function connectionOf (req: Req): Connection {
  return (req.httpVersionMajor === 2 ? (req as Http2ServerRequest).stream.session : req.socket) as Connection
}

/**
 * The consumer id header, read from rawHeaders on HTTP/1: `req.headers` is built
 * on first use, and an app that never reads it should not pay for it here. Sent
 * twice, it counts as no id, as `req.headers` would join the two into a value
 * that is not an id.
 */
function consumerId (req: Req): string | undefined {
  if (req.httpVersionMajor === 2) {
    const v = req.headers[CONSUMER_HEADER]
    return typeof v === 'string' ? v : undefined
  }
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

/**
 * Per-request work, kept to counters on the hot path: in-flight, the
 * connection's busy count and stamp, and while draining the drain marks.
 * HTTP/1 gets `connection: close` on the last request read on its socket (so
 * pipelined requests already read all get their answer); HTTP/2 gets a
 * graceful GOAWAY on its session with the response (a `connection` header is
 * invalid there).
 */
export function requestHook (ctx: RequestHookContext): RequestHook {
  const { inflight, tracker } = ctx
  const open = new OpenRequests<Req, Connection>()
  let marking: string | null = null
  const probePaths = ctx.serveRoutes && ctx.routes !== false ? ctx.routes : null
  const untracked = ctx.routes === false ? [] : [ctx.routes.ready, ctx.routes.live]

  function endRequest (this: Res): void {
    const c = open.end((this as { [kSlot]?: number })[kSlot]!)
    if (c === undefined) return
    inflight.end()
    c[kBusy]!--
  }

  function onRequest (req: Req, res: Res): Verdict {
    inflight.start()
    const c = connectionOf(req)
    ;(res as { [kSlot]?: number })[kSlot] = open.start(req, c, Date.now())
    c[kBusy] = (c[kBusy] ?? 0) + 1
    c[kUsed] = inflight.total
    res.on('close', endRequest)
    if (marking !== null) {
      res.setHeader(STATE_HEADER, marking)
      if (req.httpVersionMajor === 2) goAway(c); else closeAfter(res, c)
    }
    const url = req.url ?? ''
    if (tracker !== undefined && !untracked.includes(url)) {
      const id = consumerId(req)
      tracker.seen(id)
      if (marking !== null) tracker.told(id)
    }
    if (probePaths !== null && (req.method === 'GET' || req.method === 'HEAD')) {
      const q = url.indexOf('?')
      const path = q === -1 ? url : url.slice(0, q)
      if (path === probePaths.ready) { writeProbe(req, res, ctx.probe('ready')); return ANSWERED }
      if (path === probePaths.live) { writeProbe(req, res, ctx.probe('live')); return ANSWERED }
    }
    // While draining, an HTTP/1 handler runs once the whole read is parsed: a handler that answers
    // synchronously would otherwise decide `connection: close` before the pipelined requests after it were read.
    return marking !== null && req.httpVersionMajor !== 2 ? DEFER : PASS
  }

  return {
    onRequest,
    mark (state) { marking = state },
    inflightRequests: () => open.list()
  }
}
