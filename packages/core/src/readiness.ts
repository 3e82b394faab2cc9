import type { ReadinessCheck } from './lifecycle-options.ts'

export interface ReadinessState { passing: boolean, lastFailure: string | null, checkedAt: number | null }

/** Runs the checks in order; null when all pass, else why the first one failed. */
export async function checkReadiness (checks: readonly ReadinessCheck[], signal: AbortSignal): Promise<string | null> {
  for (let i = 0; i < checks.length; i++) {
    try {
      const ok = await checks[i]!(signal)
      if (ok === false) return `readiness[${i}] returned false`
    } catch (err) {
      return `readiness[${i}] threw: ${err instanceof Error ? err.message : String(err)}`
    }
  }
  return null
}
