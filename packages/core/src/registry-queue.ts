import { withTimeout } from './backoff.ts'
import { sleep, type Clock } from './clock.ts'
import { TimeoutError } from './errors.ts'
import type { RegistryCallOptions } from './registry.ts'

export interface RegistryQueueContext {
  clock: Clock
  /** Bound on one call (registryTimeoutMs). */
  timeoutMs: number
  problem(step: string, err: unknown): void
}

/**
 * One instance's registry calls, one at a time, in the order issued: a slow
 * deregister from a cancelled drain must not land after the register that
 * /online sent next. Each call is bounded by `timeoutMs`: then its signal is
 * aborted and the caller moves on (and retries), but the next call still waits
 * for it to settle -- for another `timeoutMs` at most, so an adapter that ignores
 * the signal and hangs delays the queue without jamming it. A call whose caller
 * gave up (`signal`: a cancelled drain, an aborted startup) while it waited its
 * turn is dropped, never sent.
 */
export class RegistryQueue {
  readonly #ctx: RegistryQueueContext
  #tail: Promise<void> = Promise.resolve()

  constructor (ctx: RegistryQueueContext) {
    this.#ctx = ctx
  }

  call (op: string, fn: (options: RegistryCallOptions) => Promise<void>, signal?: AbortSignal): Promise<void> {
    const previous = this.#tail
    let release: () => void = () => {}
    this.#tail = new Promise<void>((resolve) => { release = resolve })
    return this.#run(op, fn, previous, release, signal)
  }

  async #run (op: string, fn: (options: RegistryCallOptions) => Promise<void>, previous: Promise<void>, release: () => void, signal: AbortSignal | undefined): Promise<void> {
    await previous
    if (signal?.aborted) { release(); throw signal.reason }
    const { clock, timeoutMs } = this.#ctx
    const controller = new AbortController()
    const pending = Promise.resolve().then(() => fn({ signal: controller.signal }))
    let timedOut = false
    try {
      await withTimeout(pending, timeoutMs, () => { timedOut = true; return new TimeoutError(`registry ${op}`, timeoutMs) }, clock)
    } catch (err) {
      if (timedOut) controller.abort(err)
      throw err
    } finally {
      (timedOut ? this.#settled(op, pending) : Promise.resolve()).then(release, release)
    }
  }

  /** Waits, bounded, for a timed-out call to settle, so the next one cannot overtake it. */
  async #settled (op: string, pending: Promise<unknown>): Promise<void> {
    const { clock, timeoutMs } = this.#ctx
    const stop = new AbortController()
    const settled = await Promise.race([
      pending.then(() => true, () => true),
      sleep(clock, timeoutMs, stop.signal).then(() => false, () => true)
    ])
    stop.abort()
    if (!settled) this.#ctx.problem(`registry ${op}`, new Error(`still running ${timeoutMs} ms after its signal was aborted at the timeout; the next registry call goes ahead and may land before it (the adapter should honour the signal)`))
  }
}
