/**
 * Calls per key, one at a time, in the order issued: the SDK's calls cannot be cancelled,
 * so a caller that gave up on a slow DELETE must not see the register it sends next land
 * first (and the late DELETE undo it).
 */
export interface KeyedQueue {
  run(key: string, signal: AbortSignal | undefined, fn: () => Promise<void>): Promise<void>
  /** Resolves when every call issued so far has settled. */
  idle(): Promise<unknown>
}

export function keyedQueue (): KeyedQueue {
  const tails = new Map<string, Promise<void>>()
  return {
    run (key, signal, fn) {
      const run = (tails.get(key) ?? Promise.resolve()).then(() => {
        signal?.throwIfAborted() // the caller gave up while it waited its turn: never send it
        return fn()
      })
      const tail = run.then(() => {}, () => {})
      tails.set(key, tail)
      tail.then(() => { if (tails.get(key) === tail) tails.delete(key) }, () => {})
      return run
    },
    idle: () => Promise.all(tails.values())
  }
}
