import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Http2ServerRequest, Http2ServerResponse, ServerHttp2Stream } from 'node:http2'
import type { Lifecycle, ReadinessWhileDraining } from '@lameduck/core'

export type ProbeKind = 'ready' | 'live'
export interface ProbeAnswer { statusCode: number, body: Record<string, unknown> }

/**
 * The readiness and liveness answers, for the engine's raw routes and for a
 * framework serving the routes itself. Ready: 200 while serving, and with the
 * 'serve' policy while draining too (the instance still serves until the drain
 * is over). Live: 503 once startup failed (the kubelet restarts the container).
 */
export function probeAnswer (lifecycle: Lifecycle, kind: ProbeKind, broken: Error | null, whileDraining: ReadinessWhileDraining = 'fail'): ProbeAnswer {
  const state = lifecycle.state
  if (kind === 'ready') {
    if (state === 'serving') return { statusCode: 200, body: { state, warming: lifecycle.warming } }
    if (state === 'draining' && whileDraining === 'serve') return { statusCode: 200, body: { state, readinessWhileDraining: 'serve' } }
    return { statusCode: 503, body: { state } }
  }
  // The state only: the app port is public, and the error's message can carry a secret (a connection
  // string in a readiness failure). The detail is in the log and in the admin /status (`broken`).
  if (broken !== null) return { statusCode: 503, body: { state, error: 'startup failed' } }
  return { statusCode: 200, body: { state } }
}

/** Writes a probe answer as JSON (no body for HEAD), at the raw request level. */
export function writeProbe (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse, { statusCode, body }: ProbeAnswer): void {
  const json = JSON.stringify(body)
  res.statusCode = statusCode
  res.setHeader('content-type', 'application/json; charset=utf-8')
  res.setHeader('content-length', Buffer.byteLength(json))
  if (req.method === 'HEAD') res.end(); else res.end(json)
}

/** The same on a raw HTTP/2 stream (a server whose app uses the stream API). */
export function writeStreamProbe (stream: ServerHttp2Stream, head: boolean, { statusCode, body }: ProbeAnswer): void {
  const json = JSON.stringify(body)
  stream.respond({ ':status': statusCode, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) }, { endStream: head })
  if (!head) stream.end(json)
}
