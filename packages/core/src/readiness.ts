import type { Clock } from './clock.ts'
import { redactText } from './redact.ts'
import type { ReadinessCheck } from './lifecycle-options.ts'

export interface ReadinessState { passing: boolean, lastFailure: string | null, checkedAt: number | null }

/** A round's outcome: null when every check passed, else why the first one failed; `unsettled` when a check outlived the deadline. */
export interface ReadinessRound { failure: string | null, unsettled: boolean }

/**
 * Runs the checks in order, once, raced against `deadline` (on `clock`): a
 * check that never settles must not hold startup forever, nor keep
 * `/health/live` green. Each check gets a signal that aborts at the deadline
 * (or when the caller's does), so a well-behaved check stops its work; one that
 * ignores it is left behind, its result discarded.
 */
export async function checkReadiness (checks: readonly ReadinessCheck[], signal: AbortSignal, clock: Clock, deadline: number): Promise<ReadinessRound> {
  const round = new AbortController()
  const follow = (): void => { round.abort(signal.reason) }
  signal.addEventListener('abort', follow, { once: true })
  let current = 0
  let timer: ReturnType<Clock['setTimeout']> | undefined
  const expired = new Promise<'expired'>((resolve) => {
    timer = clock.setTimeout(() => { resolve('expired') }, Math.max(0, deadline - clock.now()))
    round.signal.addEventListener('abort', () => { resolve('expired') }, { once: true })
  })
  const run = (async (): Promise<string | null> => {
    for (let i = 0; i < checks.length; i++) {
      current = i
      try {
        const ok = await checks[i]!(round.signal)
        if (ok === false) return `readiness[${i}] returned false`
      } catch (err) {
        // The app's text (a connection string, say) reaches /status and the logs: redacted here, once.
        return `readiness[${i}] threw: ${redactText(err instanceof Error ? err.message : String(err))}`
      }
    }
    return null
  })()
  try {
    const result = await Promise.race([run, expired])
    if (result !== 'expired') return { failure: result, unsettled: false }
    signal.throwIfAborted()
    round.abort(new Error('readinessTimeoutMs reached'))
    return { failure: `readiness[${current}] did not settle before readinessTimeoutMs`, unsettled: true }
  } finally {
    if (timer !== undefined) clock.clearTimeout(timer)
    signal.removeEventListener('abort', follow)
  }
}
