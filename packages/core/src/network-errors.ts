// One reading of Node's and undici's network error codes for every package that
// talks HTTP (the CLI, the Envoy admin client): which failures mean the peer was never
// reached, which mean it went away mid-request. Code strings only, so core stays
// free of undici.

/**
 * - refused: nothing listens there (ECONNREFUSED; ENOENT for a unix socket)
 * - dns: the host name does not resolve
 * - unreachable: no route, or the connection was not accepted in time
 * - reset: the connection closed or broke before the answer was complete
 * - timeout: connected, but the answer did not come in time (undici's headers/body timeouts)
 * - aborted: our own signal ended the request
 */
export type NetworkErrorKind = 'refused' | 'dns' | 'unreachable' | 'reset' | 'timeout' | 'aborted'

const KINDS: ReadonlyMap<string, NetworkErrorKind> = new Map(Object.entries({
  ECONNREFUSED: 'refused',
  ENOENT: 'refused',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  EHOSTDOWN: 'unreachable',
  ENETDOWN: 'unreachable',
  EADDRNOTAVAIL: 'unreachable',
  ETIMEDOUT: 'unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'unreachable',
  ECONNRESET: 'reset',
  ECONNABORTED: 'reset',
  EPIPE: 'reset',
  UND_ERR_SOCKET: 'reset',
  UND_ERR_CLOSED: 'reset',
  UND_ERR_DESTROYED: 'reset',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  ABORT_ERR: 'aborted'
} satisfies Record<string, NetworkErrorKind>))

/** The error's code, or its cause's (undici's fetch wraps the socket error); '' when neither has one. */
export function networkErrorCode (err: unknown): string {
  const e = err as { code?: unknown, cause?: { code?: unknown } } | null | undefined
  if (typeof e?.code === 'string') return e.code
  if (typeof e?.cause?.code === 'string') return e.cause.code
  return ''
}

/** What kind of network failure `err` is, or undefined when it is not one (an HTTP status, a parse error). */
export function networkErrorKind (err: unknown): NetworkErrorKind | undefined {
  const kind = KINDS.get(networkErrorCode(err))
  if (kind !== undefined) return kind
  return (err as { name?: unknown } | null | undefined)?.name === 'AbortError' ? 'aborted' : undefined
}

/** The peer was never reached: refused, unresolvable or unreachable. Nothing was sent. */
export function isConnectFailure (err: unknown): boolean {
  const kind = networkErrorKind(err)
  return kind === 'refused' || kind === 'dns' || kind === 'unreachable'
}

/** The connection closed or broke before the answer was complete. */
export function isReset (err: unknown): boolean {
  return networkErrorKind(err) === 'reset'
}
