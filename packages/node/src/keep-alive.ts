import type { Server } from 'node:net'

/**
 * How long an idle HTTP/1 keep-alive connection may stay open when the server
 * advertises no timeout (`keepAliveTimeout` 0): Node's defaults, 5 s + 1 s.
 */
export const NO_HINT_IDLE_MS = 6_000

interface KeepAliveServer { keepAliveTimeout?: unknown, keepAliveTimeoutBuffer?: unknown }

/** The server's `keepAliveTimeout` in ms, or 0 when it has none (no `Keep-Alive: timeout` is advertised). */
export function keepAliveTimeoutOf (server: Server): number {
  const t = (server as KeepAliveServer).keepAliveTimeout
  return typeof t === 'number' && Number.isFinite(t) && t > 0 ? t : 0
}

/**
 * How long an HTTP/1 connection must have been idle before the server may close
 * it without racing the client's next request. HTTP/1.1 gives a server no way
 * to close a keep-alive connection safely: a request the client sends as the
 * close crosses it is reset. The one close a client expects is the timeout the
 * server advertised (`Keep-Alive: timeout=N`, from `keepAliveTimeout`):
 * clients that honour it (undici and fetch drop the connection 2 s before it)
 * are gone by then. Node itself closes at `keepAliveTimeout` plus its
 * `keepAliveTimeoutBuffer`, so this is that moment.
 */
export function idleCloseMs (server: Server): number {
  const timeout = keepAliveTimeoutOf(server)
  if (timeout === 0) return NO_HINT_IDLE_MS
  const buffer = (server as KeepAliveServer).keepAliveTimeoutBuffer
  return timeout + (typeof buffer === 'number' && Number.isFinite(buffer) && buffer > 0 ? buffer : 0)
}
