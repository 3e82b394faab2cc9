// Envoy's router on an upstream failure before the response headers: which failures a
// route's retry policy retries (RetryStateImpl::wouldRetryFromReset), the jittered
// backoff between tries, and the local reply and access-log fields when it gives up.
import { constants } from 'node:os'

/**
 * `retry_on` conditions the stand-in models. Istio's inbound route (since 2024) uses
 * `reset-before-request` with 2 retries; `none` = a route with no retry policy.
 */
export type RetryOn = 'reset-before-request' | 'connect-failure' | 'none'
export const RETRY_ON: readonly RetryOn[] = ['reset-before-request', 'connect-failure', 'none']

/** Why one upstream try failed before a response started. */
export interface UpstreamFailure {
  /** Http::Utility::resetReasonToString: 'remote connection failure', 'connection termination', ... */
  reason: string
  /** The socket error, for connection failures: 'delayed connect error: 111'. */
  transport?: string
  /** No connection was established: flag UF, and `connect-failure` applies. */
  connectFailure: boolean
  /** Some request bytes went to the upstream: `reset-before-request` no longer applies. */
  requestStarted: boolean
}

/** A failed try: was the socket ever connected, and did request bytes go out on it. */
export function classifyFailure (err: NodeJS.ErrnoException, connected: boolean, bytesSent: boolean): UpstreamFailure {
  if (!connected) {
    const errno = err.code === undefined ? undefined : (constants.errno as Record<string, number>)[err.code]
    return { reason: 'remote connection failure', transport: `delayed connect error: ${errno ?? err.code ?? 'unknown'}`, connectFailure: true, requestStarted: false }
  }
  return { reason: 'connection termination', connectFailure: false, requestStarted: bytesSent }
}

/** wouldRetryFromReset for the conditions in `retryOn`. */
export function wouldRetry (retryOn: readonly RetryOn[], failure: UpstreamFailure): boolean {
  if (retryOn.includes('reset-before-request') && !failure.requestStarted) return true
  return retryOn.includes('connect-failure') && failure.connectFailure
}

/**
 * Envoy's default retry back-off: fully jittered, base 25 ms, max 250 ms; "the first
 * retry will be delayed randomly between 0-24ms, the 2nd between 0-74ms" (router docs).
 */
export function retryBackoffMs (retry: number, random: () => number): number {
  const ceiling = Math.min(250, 25 * (2 ** retry - 1))
  return Math.floor(random() * ceiling)
}

/**
 * The 503 body of the router's local reply. Envoy 1.40.0 names only the reset reason here, not
 * the transport failure (`remote connection failure`, measured in test/real/envoy-conformance).
 */
export function upstreamResetBody (failure: UpstreamFailure, retried: boolean): string {
  const reason = failure.reason
  return `upstream connect error or disconnect/reset before headers. ${retried ? 'retried and the latest reset reason' : 'reset reason'}: ${reason}`
}

/** %RESPONSE_FLAGS%: UF or UC, plus URX when the retries ran out. */
export function responseFlags (failure: UpstreamFailure, retriesExhausted: boolean): string {
  return (failure.connectFailure ? 'UF' : 'UC') + (retriesExhausted ? ',URX' : '')
}

/** %RESPONSE_CODE_DETAILS%, spaces as underscores as Envoy writes them. */
export function responseCodeDetails (failure: UpstreamFailure): string {
  const detail = failure.transport === undefined ? failure.reason : `${failure.reason}|${failure.transport}`
  return `upstream_reset_before_response_started{${detail.replaceAll(' ', '_')}}`
}

export function parseRetryOn (value: unknown): RetryOn[] | null {
  if (typeof value !== 'string') return null
  const list = value.split(',').map((s) => s.trim())
  if (list.length === 0 || list.some((s) => !RETRY_ON.includes(s as RetryOn))) return null
  if (list.includes('none') && list.length > 1) return null
  return list as RetryOn[]
}
