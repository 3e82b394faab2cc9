// What Envoy's access log would say for each proxied request: the response flags and
// details show why a request failed (UC, UF, URX, UT) without any header on the wire.

export interface AccessLogEntry {
  method: string
  path: string
  /** The status sent downstream; 0 when the connection was reset instead. */
  status: number
  /** %RESPONSE_FLAGS%: '-' for none, else e.g. 'UC', 'UF,URX', 'UT'. */
  responseFlags: string
  /** %RESPONSE_CODE_DETAILS%: 'via_upstream', 'upstream_reset_before_response_started{...}', ... */
  details: string
  /** Upstream tries: 1 + retries. */
  attempts: number
  at: number
}

/** Keeps the newest entries only, so a long lab run does not grow without bound. */
export const ACCESS_LOG_LIMIT = 10_000

export function appendAccessLog (log: AccessLogEntry[], entry: AccessLogEntry): void {
  log.push(entry)
  if (log.length > ACCESS_LOG_LIMIT) log.splice(0, log.length - ACCESS_LOG_LIMIT)
}
