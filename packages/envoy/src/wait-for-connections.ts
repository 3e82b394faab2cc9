// Poll Envoy's active connections down to a threshold, the loop Istio's agent
// (exit-on-zero), Contour's shutdown manager and Envoy Gateway all run. Unlike Istio it
// never treats "stats unavailable" (-1) as "zero": it keeps polling until the deadline.
import { sleep, systemClock, type Clock } from '@lameduck/core'
import type { ConnectionCountOptions, EnvoyAdmin } from './admin-client.ts'
import { ENVOY_ERROR_CODES, EnvoyAdminError } from './errors.ts'
import type { RequestCountOptions } from './count-requests.ts'
import { count, duration } from './options.ts'

export interface WaitForConnectionsOptions extends Omit<ConnectionCountOptions, 'signal'> {
  /** Done when at most this many connections remain. Default 0. */
  max?: number
  /** Never done before this much time has passed, even at 0 (Istio MINIMUM_DRAIN_DURATION). Default 0. */
  minDrainMs?: number
  /** Pause between polls. Default 1000 (Istio; Contour uses 5000). */
  intervalMs?: number
  /** Give up at this time (ms epoch on `clock`). Default: `timeoutMs` from now, else never. */
  deadline?: number
  /** Give up after this long. Ignored when `deadline` is set. */
  timeoutMs?: number
  signal?: AbortSignal
  clock?: Clock
  /**
   * Stop when the admin API refuses connections: Envoy is gone, and so are its
   * connections. Default true. Timeouts and error statuses keep the loop polling.
   */
  stopWhenUnreachable?: boolean
  /**
   * When every reading so far was "unavailable" (-1: the stats do not carry the count, as
   * in Istio without EXIT_ON_ZERO_ACTIVE_CONNECTIONS), stop after this long with outcome
   * 'unavailable' instead of polling to the deadline. Default: poll to the deadline.
   */
  unavailableWaitMs?: number
  /**
   * End with outcome 'idle' before the count reaches `max` when what is left is idle and will
   * close: from `from` on (ms epoch on `clock`: when every remaining connection's next response
   * carries `connection: close` or GOAWAY), no request in flight on the app's HCMs and none
   * received for `quietMs`. Real Envoy never closes an idle keep-alive connection during or
   * after a drain (envoyproxy/envoy#42305), so a pooled consumer holds the count above 0 to the
   * deadline. Needs `http.*.downstream_rq_active|total`; without them the count alone decides.
   * Also applies when the count is unavailable (-1) but the request gauges are there.
   */
  idle?: { from: number, quietMs: number } & RequestCountOptions
  /** After each successful reading. */
  onPoll?: (count: number, elapsedMs: number) => void
  /** After each failed poll, and for each -1 reading (code LAMEDUCK_ERR_ENVOY_STATS_UNAVAILABLE). */
  onError?: (err: unknown) => void
}

export interface WaitForConnectionsResult {
  drained: boolean
  /** 'idle': connections remain, but no request is in flight or arriving and each will close on its next response. */
  outcome: 'drained' | 'idle' | 'deadline' | 'unreachable' | 'unavailable'
  /** The last reading, -1 when none succeeded. */
  count: number
  /** With `idle`: requests in flight at the last request reading, -1 when none (or unavailable). */
  activeRequests: number
  polls: number
  errors: number
  elapsedMs: number
}

/**
 * The idle rule's evidence, one reading per call: true once no request is in
 * flight and the request total has not moved for `quietMs`.
 */
function idleRule (admin: EnvoyAdmin, idle: NonNullable<WaitForConnectionsOptions['idle']>, result: WaitForConnectionsResult, signal: AbortSignal | undefined): (now: number) => Promise<boolean> {
  const { from: _from, quietMs, ...requestOptions } = idle
  // The request total as last read, and since when it has not moved.
  let lastTotal = -1
  let quietSince = 0
  return async (now) => {
    let r
    try {
      r = await admin.requestCount({ ...requestOptions, signal })
    } catch (err) {
      if (signal?.aborted) throw signal.reason
      return false // a failed reading is no evidence; the next poll tries again
    }
    result.activeRequests = r.active
    if (r.active !== 0) { lastTotal = -1; return false }
    if (r.total !== lastTotal) { lastTotal = r.total; quietSince = now; return false }
    return now - quietSince >= quietMs
  }
}

export async function waitForConnections (admin: EnvoyAdmin, options: WaitForConnectionsOptions = {}): Promise<WaitForConnectionsResult> {
  const max = count('max', options.max, 0)
  const minDrainMs = duration('minDrainMs', options.minDrainMs, 0)
  const intervalMs = duration('intervalMs', options.intervalMs, 1000, { positive: true })
  const clock = options.clock ?? systemClock
  const { signal } = options
  const started = clock.now()
  const deadline = options.deadline ?? (options.timeoutMs === undefined ? Infinity : started + duration('timeoutMs', options.timeoutMs, 0))
  const stopWhenUnreachable = options.stopWhenUnreachable ?? true
  const unavailableWaitMs = options.unavailableWaitMs === undefined ? Infinity : duration('unavailableWaitMs', options.unavailableWaitMs, 0)
  const countOptions: ConnectionCountOptions = { method: options.method, excludePorts: options.excludePorts, excludePrefixes: options.excludePrefixes, include: options.include, inboundListeners: options.inboundListeners, signal }
  let unavailable = 0
  const result: WaitForConnectionsResult = { drained: false, outcome: 'deadline', count: -1, activeRequests: -1, polls: 0, errors: 0, elapsedMs: 0 }
  const finish = (outcome: WaitForConnectionsResult['outcome']): WaitForConnectionsResult => {
    result.outcome = outcome
    result.drained = outcome === 'drained' || outcome === 'idle'
    result.elapsedMs = clock.now() - started
    return result
  }

  const quiet = options.idle === undefined ? async () => false : idleRule(admin, options.idle, result, signal)

  for (;;) {
    signal?.throwIfAborted()
    result.polls++
    let reading = -1
    try {
      const c = await admin.connectionCount(countOptions)
      reading = c.count
      if (c.count === -1) {
        result.errors++
        unavailable++
        options.onError?.(new EnvoyAdminError(ENVOY_ERROR_CODES.STATS_UNAVAILABLE, `active connections unavailable: ${c.reason ?? 'unknown'}`, { url: admin.url, method: 'GET' }))
      } else {
        result.count = c.count
        options.onPoll?.(c.count, clock.now() - started)
      }
    } catch (err) {
      if (signal?.aborted) throw signal.reason
      result.errors++
      options.onError?.(err)
      if (stopWhenUnreachable && err instanceof EnvoyAdminError && err.code === ENVOY_ERROR_CODES.UNREACHABLE) return finish('unreachable')
    }
    const now = clock.now()
    const minDrainLeft = started + minDrainMs - now
    if (reading >= 0 && reading <= max && minDrainLeft <= 0) return finish('drained')
    // Above the threshold, or no count at all (Istio keeps the request gauges without
    // EXIT_ON_ZERO_ACTIVE_CONNECTIONS when asked): idle and told to close is the same evidence.
    if ((reading > max || reading === -1) && minDrainLeft <= 0 && options.idle !== undefined && now >= options.idle.from && await quiet(now)) return finish('idle')
    if (now >= deadline) return finish('deadline')
    // Never a count, only "unavailable": waiting longer cannot tell more.
    if (result.count === -1 && unavailable > 0 && now - started >= Math.max(unavailableWaitMs, minDrainMs)) return finish('unavailable')
    // Below the threshold but inside minDrainMs: check again when it ends, not later.
    const wait = reading >= 0 && reading <= max ? Math.min(intervalMs, minDrainLeft) : intervalMs
    const untilFallback = result.count === -1 && unavailable > 0 ? Math.max(1, started + Math.max(unavailableWaitMs, minDrainMs) - now) : Infinity
    await sleep(clock, Math.min(wait, deadline - now, untilFallback), signal)
  }
}
