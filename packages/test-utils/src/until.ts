export interface UntilOptions {
  /** How long to keep polling before failing. Default 10 000 ms: generous, a busy machine must not fail it. */
  timeoutMs?: number
  /** Pause between polls. Default 10 ms. */
  intervalMs?: number
}

/**
 * Polls `fn` until it returns a truthy value and returns that value; fails with
 * `what` in the message after `timeoutMs`. Waits for events, never asserts on
 * how fast they came (the timeout is a deadline for a hang, not a measurement).
 */
export async function until<T> (fn: () => T | Promise<T>, what: string, options: UntilOptions | number = {}, legacyIntervalMs?: number): Promise<NonNullable<T>> {
  // A number is the older positional form (timeoutMs, intervalMs), kept while other branches still use it.
  const { timeoutMs = 10_000, intervalMs = legacyIntervalMs ?? 10 } = typeof options === 'number' ? { timeoutMs: options } : options
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await fn()
    if (value) return value as NonNullable<T>
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}
