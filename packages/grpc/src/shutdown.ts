import type { Server as GrpcServer } from '@grpc/grpc-js'
import { bindings, sessions } from './server-internals.ts'

/**
 * drain()'s grace: after it grpc-js destroys the sessions it told. lameduck cuts
 * at its own bounds (maxRequestMs, then the close grace) and names what it cut,
 * so grpc-js's silent cut is pushed out of the way (the timer is unref'd).
 */
const NO_GRACE_CUT_MS = 2 ** 31 - 1

/**
 * GOAWAY (NO_ERROR) to every connection: clients start no new call on it and
 * reconnect (re-resolving, so a deregistered instance is left), while the calls
 * on it complete. grpc-js's drain() per bound port where it has one (gRFC L111,
 * 1.10+), then session.close() for any session it did not reach (connection
 * injectors, or a grpc-js without drain()): the same GOAWAY. Returns how many
 * connections were told.
 */
export function goAway (server: GrpcServer): number {
  const drain = (server as { drain?: (port: string, graceMs: number) => void }).drain
  const open = sessions(server).filter((s) => !s.closed && !s.destroyed)
  if (typeof drain === 'function') {
    for (const b of bindings(server).bound) {
      try { drain.call(server, b.key, NO_GRACE_CUT_MS) } catch { /* a port grpc-js cannot drain by name: closed below */ }
    }
  }
  for (const s of open) if (!s.closed && !s.destroyed) s.close()
  return open.length
}

/** grpc-js's tryShutdown: resolves once every connection closed (their calls complete first). */
export function tryShutdownAll (server: GrpcServer, tryShutdown: GrpcServer['tryShutdown']): Promise<void> {
  return new Promise((resolve) => { tryShutdown.call(server, () => { resolve() }) })
}

/** True when `p` settles within `ms`. */
export function within (p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    p.then(() => true, () => true),
    new Promise<boolean>((resolve) => { timer = setTimeout(() => { resolve(false) }, ms) })
  ]).finally(() => { clearTimeout(timer) })
}
