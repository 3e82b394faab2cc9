// The Envoy drain both the sidecar step and `lameduck envoy-drain` run: send the drain
// call(s) with Contour's retry, then poll the active connections down to a threshold.
// Callers say what to do with each event (log, print) and with the result.
import { backoffDelay, sleep, systemClock, type BackoffOptions, type Clock } from '@lameduck/core'
import { drainListenersPath, type EnvoyAdmin } from './admin-client.ts'
import type { ConnectionCountMethod } from './count-connections.ts'
import { ENVOY_ERROR_CODES, EnvoyAdminError } from './errors.ts'
import type { WaitForConnectionsResult } from './wait-for-connections.ts'

/**
 * 'healthcheck': `POST /healthcheck/fail` (Contour: /ready turns 503, HTTP/1.1 answers carry
 * connection: close); 'listeners': `POST /drain_listeners?graceful` (Istio); 'both': the two, in that order.
 */
export type DrainStrategy = 'healthcheck' | 'listeners' | 'both'

/** Contour's retry of /healthcheck/fail: 200 ms x5 (200 ms, 1 s, 5 s), 10% jitter. */
export const CONTOUR_BACKOFF: Readonly<BackoffOptions> = Object.freeze({ initialMs: 200, factor: 5, maxMs: 5_000, jitter: 0.1 })

export interface DrainCall {
  /** 'healthcheck/fail' or 'drain_listeners'. */
  action: string
  /** As sent, e.g. 'POST /drain_listeners?inboundonly&graceful'. */
  request: string
}

export type DrainProgress =
  | { type: 'sent', call: DrainCall }
  /** `retryInMs` is undefined when no retry follows (last attempt, a 4xx, or the deadline is too close). */
  | { type: 'attempt-failed', call: DrainCall, attempt: number, error: unknown, retryInMs: number | undefined }
  /** Every attempt failed; the drain carries on to the next call and the wait (`pollAfterFailedCall`). */
  | { type: 'call-failed', call: DrainCall, attempts: number, error: unknown }
  | { type: 'waiting', max: number }
  | { type: 'poll', count: number }
  | { type: 'poll-error', error: unknown }
  /** When idle connections count as drained (`idleQuietMs`), and why; `fromMs` after the drain call(s); undefined: never (no evidence). */
  | { type: 'idle-rule', fromMs: number | undefined, reason: string }

export interface DrainEnvoyOptions {
  strategy: DrainStrategy
  /** listeners/both: only inbound listeners. Default false. */
  inboundOnly?: boolean
  /** listeners/both: never stop the listeners (`skip_exit`). Default false. */
  skipExit?: boolean
  /** Tries of each drain call. Default 4 (Contour). */
  attempts?: number
  /** Delays between those tries. Default CONTOUR_BACKOFF. */
  backoff?: BackoffOptions
  /**
   * After a drain call failed every attempt (not a 4xx, not unreachable): false skips the
   * wait (nothing was drained, so nothing to wait for), true polls anyway as Contour does
   * (the connections may drain on their own). Default false.
   */
  pollAfterFailedCall?: boolean
  /** Done when at most this many connections remain (Contour's --min-open-connections). Default 0. */
  maxOpenConnections?: number
  /** Wait at least this long after the drain call, even at 0 connections. Default 0. */
  minDrainMs?: number
  /** Pause between connection polls. Default 1000. */
  checkIntervalMs?: number
  /** Bound on the whole drain, retries included; 0 = none. Default 0. */
  timeoutMs?: number
  /** The same bound as a time on `clock` (ms epoch); wins over timeoutMs. */
  deadline?: number
  /** See WaitForConnectionsOptions.unavailableWaitMs. */
  unavailableWaitMs?: number
  /**
   * End before the count reaches `maxOpenConnections` once the connections left are idle and
   * will close on their next response (outcome 'idle'): no request in flight on the app's HCMs
   * and none received for this long. When the remaining connections are told to close comes
   * from the drain: at once after `/healthcheck/fail` or an `Immediate` drain strategy, after
   * `drain_time` with `Gradual` (both read from `/server_info`). Default: off (the count decides).
   */
  idleQuietMs?: number
  method?: ConnectionCountMethod
  inboundListeners?: readonly string[]
  signal?: AbortSignal
  clock?: Clock
  onProgress?: (event: DrainProgress) => void
}

export type DrainEnvoyResult =
  | WaitForConnectionsResult
  /** A drain call failed: refused (4xx), unreachable, or (without pollAfterFailedCall) every attempt. No wait followed. */
  | { outcome: 'not-sent', call: DrainCall, attempts: number, error: unknown, elapsedMs: number }

/** Drains Envoy and waits for its connections. Rejects only when `signal` aborts. */
export async function drainEnvoy (admin: EnvoyAdmin, options: DrainEnvoyOptions): Promise<DrainEnvoyResult> {
  const clock = options.clock ?? systemClock
  const started = clock.now()
  const deadline = options.deadline ?? (options.timeoutMs !== undefined && options.timeoutMs > 0 ? started + options.timeoutMs : Infinity)
  const emit = options.onProgress ?? (() => {})
  let allSent = true
  for (const [call, send] of drainCalls(admin, options)) {
    const failure = await sendWithRetry(call, send, { ...options, clock, deadline, emit })
    if (failure === undefined) { emit({ type: 'sent', call }); continue }
    const unreachable = failure.error instanceof EnvoyAdminError && failure.error.code === ENVOY_ERROR_CODES.UNREACHABLE
    if (failure.permanent || unreachable || options.pollAfterFailedCall !== true) {
      return { outcome: 'not-sent', call, attempts: failure.attempts, error: failure.error, elapsedMs: clock.now() - started }
    }
    allSent = false
    emit({ type: 'call-failed', call, attempts: failure.attempts, error: failure.error })
  }
  const max = options.maxOpenConnections ?? 0
  const idle = options.idleQuietMs === undefined
    ? undefined
    : allSent ? await idleFrom(admin, options, clock.now()) : { from: undefined, reason: 'a drain call failed: the connections were not told to close' }
  if (idle !== undefined) emit({ type: 'idle-rule', fromMs: idle.from === undefined ? undefined : idle.from - clock.now(), reason: idle.reason })
  emit({ type: 'waiting', max })
  return await admin.waitForConnections({
    max,
    minDrainMs: options.minDrainMs,
    intervalMs: options.checkIntervalMs,
    unavailableWaitMs: options.unavailableWaitMs,
    method: options.method,
    inboundListeners: options.inboundListeners,
    idle: idle?.from === undefined ? undefined : { from: idle.from, quietMs: options.idleQuietMs! },
    deadline,
    signal: options.signal,
    clock,
    onPoll: (count) => emit({ type: 'poll', count }),
    onError: (error) => emit({ type: 'poll-error', error })
  })
}

/**
 * From when every remaining downstream connection closes on its next response. After
 * `/healthcheck/fail` at once (drainClose is always true on DEFAULT listeners); after a
 * listener drain it depends on Envoy's `--drain-strategy`: immediate at once, gradual only
 * past `--drain-time-s` (before that a response drains its connection with a probability).
 */
async function idleFrom (admin: EnvoyAdmin, o: DrainEnvoyOptions, sentAt: number): Promise<{ from: number | undefined, reason: string }> {
  if (o.strategy !== 'listeners') return { from: sentAt, reason: 'health check failed: every response closes its connection' }
  let info
  try {
    info = await admin.serverInfo({ signal: o.signal })
  } catch (err) {
    if (o.signal?.aborted) throw o.signal.reason
    return { from: undefined, reason: `no /server_info (${err instanceof Error ? err.message : String(err)}): the drain strategy is unknown` }
  }
  const strategy = info.command_line_options?.drain_strategy
  if (strategy === 'Immediate') return { from: sentAt, reason: 'drain strategy Immediate: every response closes its connection' }
  const drainTimeMs = protoDurationMs(info.command_line_options?.drain_time)
  if (strategy === 'Gradual' && drainTimeMs !== undefined) return { from: sentAt + drainTimeMs, reason: `drain strategy Gradual: every response closes its connection after drain_time (${drainTimeMs} ms)` }
  return { from: undefined, reason: `drain strategy ${String(strategy)} / drain_time ${String(info.command_line_options?.drain_time)} not understood` }
}

/** Protobuf JSON duration ("45s", "0.500s") in ms. */
function protoDurationMs (value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined
  const m = /^(\d+(?:\.\d+)?)s$/.exec(value)
  return m === null ? undefined : Math.round(Number(m[1]) * 1000)
}

function drainCalls (admin: EnvoyAdmin, o: DrainEnvoyOptions): Array<[DrainCall, () => Promise<void>]> {
  const { signal } = o
  const calls: Array<[DrainCall, () => Promise<void>]> = []
  if (o.strategy !== 'listeners') {
    calls.push([{ action: 'healthcheck/fail', request: 'POST /healthcheck/fail' }, () => admin.failHealthcheck({ signal })])
  }
  if (o.strategy !== 'healthcheck') {
    const listeners = { inboundOnly: o.inboundOnly ?? false, graceful: true, skipExit: o.skipExit ?? false }
    calls.push([{ action: 'drain_listeners', request: `POST ${drainListenersPath(listeners)}` }, () => admin.drainListeners({ ...listeners, signal })])
  }
  return calls
}

interface RetryContext {
  attempts?: number
  backoff?: BackoffOptions
  signal?: AbortSignal
  clock: Clock
  deadline: number
  emit: (event: DrainProgress) => void
}

/** Undefined when the call went through; else the last error and whether retrying could help. */
async function sendWithRetry (call: DrainCall, send: () => Promise<void>, c: RetryContext): Promise<{ error: unknown, attempts: number, permanent: boolean } | undefined> {
  const attempts = Math.max(1, c.attempts ?? 4)
  for (let attempt = 1; ; attempt++) {
    try {
      await send()
      return undefined
    } catch (error) {
      if (c.signal?.aborted) throw c.signal.reason
      // A 4xx will not change on retry: wrong URL or an Envoy that refuses the call.
      const permanent = error instanceof EnvoyAdminError && error.statusCode !== undefined && error.statusCode < 500
      const delayMs = backoffDelay(attempt, c.backoff ?? CONTOUR_BACKOFF)
      // The whole drain, retries included, is bounded by the deadline: the shutdown budget counts on it.
      const retry = !permanent && attempt < attempts && c.clock.now() + delayMs < c.deadline
      c.emit({ type: 'attempt-failed', call, attempt, error, retryInMs: retry ? delayMs : undefined })
      if (!retry) return { error, attempts: attempt, permanent }
      await sleep(c.clock, delayMs, c.signal)
    }
  }
}
