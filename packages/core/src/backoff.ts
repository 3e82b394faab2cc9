import { sleep, systemClock, type Clock } from './clock.ts'

export interface BackoffOptions {
  /** First delay. Default 250 ms. */
  initialMs?: number
  /** Ceiling. Default 15 s. */
  maxMs?: number
  /** Growth per attempt. Default 2. */
  factor?: number
  /** Random spread, 0..1, so a fleet that lost its registry does not retry in lockstep. Default 0.2. */
  jitter?: number
}

/** What an unset part of BackoffOptions means. */
export const BACKOFF_DEFAULTS: Readonly<Required<BackoffOptions>> = Object.freeze({ initialMs: 250, maxMs: 15_000, factor: 2, jitter: 0.2 })

/** Delay before retry number `attempt` (1-based). */
export function backoffDelay (attempt: number, options: BackoffOptions = {}, random = Math.random): number {
  const { initialMs = BACKOFF_DEFAULTS.initialMs, maxMs = BACKOFF_DEFAULTS.maxMs, factor = BACKOFF_DEFAULTS.factor, jitter = BACKOFF_DEFAULTS.jitter } = options
  const base = Math.min(maxMs, initialMs * factor ** Math.max(0, attempt - 1))
  return Math.round(base * (1 - jitter + 2 * jitter * random()))
}

export interface RetryOptions {
  signal?: AbortSignal
  clock?: Clock
  backoff?: BackoffOptions
  /** False for errors that no retry can fix (a bad option, a call made too early): `retry` rethrows them at once. */
  retryable?: (err: unknown) => boolean
  /** Called after each failure with the error, the attempt number and the delay before the next one. */
  onError?: (err: unknown, attempt: number, delayMs: number) => void
}

/** Calls `fn` until it succeeds or `signal` aborts (then rejects with the abort reason). */
export async function retry<T> (fn: (attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const clock = options.clock ?? systemClock
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted()
    try {
      return await fn(attempt)
    } catch (err) {
      options.signal?.throwIfAborted()
      if (options.retryable?.(err) === false) throw err
      const delayMs = backoffDelay(attempt, options.backoff)
      options.onError?.(err, attempt, delayMs)
      await sleep(clock, delayMs, options.signal)
    }
  }
}

/** Rejects with `onTimeout()` if `promise` has not settled within `ms`. */
export function withTimeout<T> (promise: Promise<T>, ms: number, onTimeout: () => Error, clock: Clock = systemClock): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = clock.setTimeout(() => reject(onTimeout()), ms)
    promise.then(
      (v) => { clock.clearTimeout(timer); resolve(v) },
      (e: unknown) => { clock.clearTimeout(timer); reject(e) }
    )
  })
}
