import { constants, type ServerHttp2Session } from 'node:http2'
import type { Server as GrpcServer } from '@grpc/grpc-js'
import { bindings, sessions } from './server-internals.ts'

/**
 * drain()'s grace: after it grpc-js destroys the sessions it told. lameduck cuts
 * at its own bounds (maxRequestMs, then the close grace) and names what it cut,
 * so grpc-js's silent cut is pushed out of the way (the timer is unref'd).
 */
const NO_GRACE_CUT_MS = 2 ** 31 - 1
/** The highest stream id: a GOAWAY naming it is RFC 9113's shutdown notice (no stream refused). */
const MAX_STREAM_ID = 2 ** 31 - 1
/** How long the final GOAWAY waits for the client's PING answer (the notice has reached it by then). */
const NOTICE_RTT_BOUND_MS = 1_000

/**
 * Tells every open connection to go, the graceful way gRPC servers do it (grpc-go's
 * GracefulStop, gRFC A9's double GOAWAY): first a GOAWAY naming the highest stream
 * id, so the client opens no new call here and no call already on the wire is refused;
 * then, once a PING round trip shows the client has read it (bounded), the final
 * GOAWAY to those connections: grpc-js's drain() per bound port where it has one
 * (gRFC L111, 1.10+) and no client has connected since the notice (drain() would
 * tell the new connection too), else session.close() on each. Calls in flight complete.
 * A single GOAWAY with the last stream read (what drain() alone sends) refuses the
 * calls a client sent as it crossed, and a client retries a refused call only once.
 * Returns how many connections were told.
 */
export function goAway (server: GrpcServer): number {
  const open = sessions(server).filter(isOpen)
  const final = (): void => { finalGoAway(server, new Set(open)) }
  Promise.all(open.map(notice)).then(final, final)
  return open.length
}

/** The shutdown notice, then a PING; resolves once it is answered, the session is gone, or the bound passed. */
function notice (session: ServerHttp2Session): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, NOTICE_RTT_BOUND_MS)
    timer.unref()
    const done = (): void => { clearTimeout(timer); resolve() }
    try {
      session.goaway(constants.NGHTTP2_NO_ERROR, MAX_STREAM_ID)
      if (!session.ping(done)) done()
    } catch {
      done() // closed under us: nothing to tell
    }
  })
}

const isOpen = (s: ServerHttp2Session): boolean => !s.closed && !s.destroyed

function finalGoAway (server: GrpcServer, noticed: Set<ServerHttp2Session>): void {
  const drain = (server as { drain?: (port: string, graceMs: number) => void }).drain
  const fresh = sessions(server).some((s) => isOpen(s) && !noticed.has(s))
  if (typeof drain === 'function' && !fresh) {
    for (const b of bindings(server).bound) {
      try { drain.call(server, b.key, NO_GRACE_CUT_MS) } catch { /* a port grpc-js cannot drain by name: closed below */ }
    }
  }
  for (const s of noticed) if (isOpen(s)) s.close()
}

/** grpc-js's tryShutdown, bounded: true when every connection closed within `ms`. */
export function tryShutdownWithin (server: GrpcServer, tryShutdown: GrpcServer['tryShutdown'], ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => { resolve(false) }, ms)
    tryShutdown.call(server, () => { clearTimeout(timer); resolve(true) })
  })
}
