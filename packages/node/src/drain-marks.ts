import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse, Http2Session, OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2'
import { STATE_HEADER } from '@lameduck/core'
import { kUsed } from './idle-sweeper.ts'
import { kOpenedAt, type Connection } from './connections.ts'
import { http2 } from './builtins.ts'

const kGoingAway = Symbol('lameduck.goingAway')
const MAX_STREAM_ID = 2 ** 31 - 1
const MIN_SESSION_AGE_MS = 250

/**
 * HTTP/1's drain mark: `connection: close` on this response if it is still the
 * last request read on its socket when its head is written. Earlier pipelined
 * requests keep the socket open for the ones read after them, so every request
 * that was read gets its answer.
 */
export function closeAfter (res: ServerResponse | Http2ServerResponse, c: Connection): void {
  const stamp = c[kUsed]
  const writeHead = res.writeHead as (...args: unknown[]) => unknown
  res.writeHead = function lameduckWriteHead (this: ServerResponse, ...args: unknown[]) {
    if (c[kUsed] === stamp && !this.headersSent) this.setHeader('connection', 'close')
    return writeHead.apply(this, args)
  } as typeof res.writeHead
}

const RESPONDERS = ['respond', 'respondWithFD', 'respondWithFile'] as const

/**
 * The state header on a raw HTTP/2 stream's response (the stream API has no
 * setHeader): each of the stream's respond methods adds it to the headers it
 * is given, unless the app set it.
 */
export function markStream (stream: ServerHttp2Stream, state: string): void {
  for (const name of RESPONDERS) {
    const respond = stream[name] as (this: ServerHttp2Stream, headers?: OutgoingHttpHeaders, ...rest: unknown[]) => void
    ;(stream as unknown as Record<string, unknown>)[name] = function lameduckRespond (this: ServerHttp2Stream, headers?: OutgoingHttpHeaders, ...rest: unknown[]) {
      return respond.call(this, headers?.[STATE_HEADER] === undefined ? { ...headers, [STATE_HEADER]: state } : headers, ...rest)
    }
  }
}

/**
 * HTTP/2's `connection: close`: a GOAWAY (NO_ERROR) with the highest stream id
 * (RFC 9113 section 6.8's shutdown notice), sent before this response ends. The client
 * opens no new stream here and closes the session once its streams are done;
 * no stream is refused, not even one already on the wire. A session the client
 * leaves open is closed by the idle sweep.
 *
 * A session younger than MIN_SESSION_AGE_MS gets it just before the response
 * ends instead, if old enough by then: a client that replays requests from a
 * session told to go onto a new one (undici, gRPC) may not have sent them all
 * yet, and after a notice it would not send them (undici replays such a request
 * only once). The notice must precede the end on the wire: one that follows it
 * meets a client already sending its next request on the session.
 */
export function goAway (session: Connection, response?: Endable): void {
  const s = session as Http2Session & { [kGoingAway]?: boolean, [kOpenedAt]?: number }
  if (s[kGoingAway] === true || s.closed || s.destroyed) return
  if (Date.now() - (s[kOpenedAt] ?? 0) < MIN_SESSION_AGE_MS) {
    if (response !== undefined) goAwayAtEnd(session, response)
    return
  }
  s[kGoingAway] = true
  s.goaway(http2().constants.NGHTTP2_NO_ERROR, MAX_STREAM_ID)
}

/** What ends a response: the compat response, or a raw stream. */
interface Endable { end: (...args: any[]) => unknown }

function goAwayAtEnd (session: Connection, response: Endable): void {
  const end = response.end
  response.end = function lameduckEnd (this: Endable, ...args: unknown[]) {
    response.end = end
    goAway(session)
    return end.apply(this, args)
  }
}
