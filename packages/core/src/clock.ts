// Time is injected so the lifecycle and the balancer can run on a virtual clock
// in tests: windows of 90 s are checked without waiting 90 s.

export interface Timer { unref?(): unknown }

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
  setTimeout(fn: () => void, ms: number): Timer
  clearTimeout(timer: Timer): void
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout)
}

export interface SleepOptions {
  /** Resolve at once when the signal aborts instead of rejecting: for loops that check the signal themselves. */
  resolveOnAbort?: boolean
}

/** Resolves after `ms` on `clock`, or rejects with the signal's reason when aborted (resolves, with `resolveOnAbort`). */
export function sleep (clock: Clock, ms: number, signal?: AbortSignal, options: SleepOptions = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const aborted = (): void => { if (options.resolveOnAbort === true) resolve(); else reject(signal!.reason) }
    if (signal?.aborted) { aborted(); return }
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, Math.max(0, ms))
    function onAbort (): void {
      clock.clearTimeout(timer)
      aborted()
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

interface VirtualTimer extends Timer { at: number, seq: number, fn: () => void, cleared: boolean }

export interface VirtualClock extends Clock {
  /** Moves time forward, firing due timers in order and letting promises settle between them. */
  advance(ms: number): Promise<void>
  /** Number of timers waiting to fire. */
  readonly pending: number
}

/** A deterministic clock for tests. Timers fire only from `advance()`. */
export function virtualClock (start = 1_700_000_000_000): VirtualClock {
  let now = start
  let seq = 0
  const timers: VirtualTimer[] = []
  const flush = async (): Promise<void> => {
    // Several turns so chains of awaits after a timer can schedule the next one.
    for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve))
  }
  return {
    now: () => now,
    setTimeout (fn, ms) {
      const timer: VirtualTimer = { at: now + Math.max(0, ms), seq: seq++, fn, cleared: false, unref () { return timer } }
      timers.push(timer)
      return timer
    },
    clearTimeout (timer) {
      const t = timer as VirtualTimer
      t.cleared = true
      const i = timers.indexOf(t)
      if (i !== -1) timers.splice(i, 1)
    },
    get pending () { return timers.length },
    async advance (ms) {
      const end = now + ms
      await flush()
      for (;;) {
        timers.sort((a, b) => a.at - b.at || a.seq - b.seq)
        const next = timers[0]
        if (next === undefined || next.at > end) break
        timers.shift()
        now = Math.max(now, next.at)
        next.fn()
        await flush()
      }
      now = end
      await flush()
    }
  }
}
