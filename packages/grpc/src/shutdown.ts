import { constants } from 'node:http2'
import type { Server as GrpcServer } from '@grpc/grpc-js'
import { bindings, sessions } from './server-internals.ts'

/**
 * drain()'s grace: after it grpc-js destroys the sessions it told. lameduck cuts
 * at its own bounds (maxRequestMs, then the close grace) and names what it cut,
 * so grpc-js's silent cut is pushed out of the way (the timer is unref'd).
 */
const NO_GRACE_CUT_MS = 2 ** 31 - 1

/**
 * How long the final GOAWAY waits for a client to acknowledge the first one (a PING
 * sent right after it): a client that does not answer gets the final one then.
 */
export const FINAL_GOAWAY_AFTER_MS = 1_000

/** The highest stream id HTTP/2 allows: "no stream refused yet". */
const MAX_STREAM_ID = 2 ** 31 - 1

export interface GoAway {
  /** Connections told. */
  told: number
  /** Resolves once every connection got the final GOAWAY (at most FINAL_GOAWAY_AFTER_MS after the first). */
  done: Promise<void>
}

/**
 * GOAWAY to every connection, in two steps as grpc-go and Envoy do it: clients start
 * no new call on it and reconnect (re-resolving, so a deregistered instance is left),
 * while the calls on it complete.
 *
 * One GOAWAY alone names the last stream the server processed, so the calls a busy
 * client sent meanwhile are refused ("Stream refused by server"), and once the
 * connection closes with their frames unread the client may see a reset instead of
 * the GOAWAY ("Connection dropped", seen over TLS under load). So first a GOAWAY with
 * the highest stream id (nothing refused) and a PING; the PING's ack means the client
 * has read the GOAWAY and sends nothing new here; then the final GOAWAY: grpc-js's
 * drain() per bound port where it has one (gRFC L111, 1.10+), then session.close()
 * for any session it did not reach (connection injectors, or a grpc-js without drain()).
 */
export function goAway (server: GrpcServer): GoAway {
  const open = sessions(server).filter((s) => !s.closed && !s.destroyed)
  const acked = open.map((session) => new Promise<void>((resolve) => {
    try {
      session.goaway(constants.NGHTTP2_NO_ERROR, MAX_STREAM_ID)
      if (!session.ping(() => { resolve() })) resolve()
    } catch {
      resolve() // closed meanwhile: the final step skips it
    }
  }))
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<void>((resolve) => { timer = setTimeout(resolve, FINAL_GOAWAY_AFTER_MS) })
  const done = Promise.race([Promise.all(acked), bound]).then(() => {
    clearTimeout(timer)
    finalGoAway(server)
  })
  return { told: open.length, done }
}

/** The GOAWAY naming the last stream processed: the calls on the connection complete, then it closes. */
function finalGoAway (server: GrpcServer): void {
  const drain = (server as { drain?: (port: string, graceMs: number) => void }).drain
  if (typeof drain === 'function') {
    for (const b of bindings(server).bound) {
      try { drain.call(server, b.key, NO_GRACE_CUT_MS) } catch { /* a port grpc-js cannot drain by name: closed below */ }
    }
  }
  for (const s of sessions(server)) if (!s.closed && !s.destroyed) s.close()
}

/** grpc-js's tryShutdown, bounded: true when every connection closed within `ms`. */
export function tryShutdownWithin (server: GrpcServer, tryShutdown: GrpcServer['tryShutdown'], ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => { resolve(false) }, ms)
    tryShutdown.call(server, () => { clearTimeout(timer); resolve(true) })
  })
}
