import { sleep, type Clock } from './clock.ts'
import type { InFlightTracker } from './inflight.ts'
import type { ResolvedLifecycleOptions } from './lifecycle-options.ts'
import type { DrainProgress, OfflineReport, Problem } from './lifecycle-types.ts'
import type { Logger } from './logger.ts'

/** The abort reason online() uses: the sequence ends 'cancelled' rather than 'cut'. */
export const CANCELLED = Symbol('lameduck.cancelled')

export interface DrainContext {
  clock: Clock
  logger: Logger
  options: ResolvedLifecycleOptions
  inflight: InFlightTracker
  /** Records a problem with the lifecycle (logs, events, /status) and returns it. */
  problem(step: string, err: unknown): Problem
  /**
   * Deregisters whatever is registered, retrying until it succeeds or `signal`
   * aborts. Resolves true once the registry confirmed, false when there was
   * nothing to deregister; rejects only on abort.
   */
  deregister(signal: AbortSignal, problem: (step: string, err: unknown) => void): Promise<boolean> | false
}

/**
 * One run of the offline sequence: deregister (in the background, retried), serve
 * through the propagation window — counted from the confirmed deregistration,
 * never shortened by a failing registry, ended early only by the earlyOffline
 * monitor — then the afterWindow steps (sidecar), then in-flight → 0.
 */
export class DrainSequence {
  readonly reason: string
  readonly startedAt: number
  readonly abort = new AbortController()
  readonly requestsAtStart: number
  phase: DrainProgress['phase'] = 'deregistering'
  deregisteredAt: number | null = null
  windowEndsAt: number
  readonly problems: Problem[] = []
  readonly #ctx: DrainContext
  #wake: () => void = () => {}

  constructor (ctx: DrainContext, reason: string) {
    this.#ctx = ctx
    this.reason = reason
    this.startedAt = ctx.clock.now()
    this.windowEndsAt = this.startedAt + ctx.options.window.totalMs
    this.requestsAtStart = ctx.inflight.total
  }

  progress (): DrainProgress {
    return {
      phase: this.phase,
      reason: this.reason,
      startedAt: this.startedAt,
      deregisteredAt: this.deregisteredAt,
      windowEndsAt: this.windowEndsAt,
      requestsWhileDraining: this.#ctx.inflight.total - this.requestsAtStart,
      earlyOfflinePending: this.#ctx.options.earlyOffline?.pending(this.#ctx.clock.now()) ?? null
    }
  }

  #problem = (step: string, err: unknown): void => { this.problems.push(this.#ctx.problem(step, err)) }

  async run (): Promise<OfflineReport> {
    const { clock, options: o, inflight } = this.#ctx
    const signal = this.abort.signal
    const unwatch = o.earlyOffline?.onChange(() => this.#wake())
    let outcome: OfflineReport['outcome'] = 'offline'
    let windowEndedAt: number | null = null
    let endedEarly = false
    let sidecarMs = 0
    let inflightWaitMs = 0
    try {
      // Retries go on after the window (while offline) until online() or close abort them.
      const deregistration = this.#ctx.deregister(signal, this.#problem)
      if (deregistration === false) {
        this.deregisteredAt = this.startedAt
      } else {
        deregistration.then((deregistered) => {
          const at = clock.now()
          this.deregisteredAt = deregistered ? at : this.startedAt
          // The window runs from the moment consumers could start to see the change.
          if (deregistered) this.windowEndsAt = Math.max(this.windowEndsAt, at + o.window.totalMs)
          this.#wake()
        }, () => {})
      }
      this.phase = 'window'
      for (;;) {
        signal.throwIfAborted()
        const now = clock.now()
        if (now >= this.windowEndsAt) break
        if (o.earlyOffline !== undefined && this.deregisteredAt !== null && o.earlyOffline.pending(now) === null) { endedEarly = true; break }
        const woken = new Promise<void>((resolve) => { this.#wake = resolve })
        const timer = new AbortController()
        await Promise.race([sleep(clock, this.windowEndsAt - now, AbortSignal.any([signal, timer.signal])).catch(() => {}), woken])
        timer.abort()
      }
      windowEndedAt = clock.now()
      if (this.deregisteredAt === null) this.#problem('deregister', new Error('the registry has not confirmed deregistration by the end of the window; consumers may still route here (retrying in the background)'))

      this.phase = 'sidecar'
      const sidecarStart = clock.now()
      for (const step of o.afterWindow) await this.#step(step, signal)
      sidecarMs = clock.now() - sidecarStart

      this.phase = 'inflight'
      const inflightStart = clock.now()
      if (inflight.count > 0) {
        const bound = new AbortController()
        const both = AbortSignal.any([signal, bound.signal])
        const drained = await Promise.race([
          inflight.idle(both).then(() => true, () => false),
          sleep(clock, o.maxRequestMs, both).then(() => false, () => false)
        ])
        bound.abort()
        signal.throwIfAborted()
        if (!drained) this.#problem('in-flight drain', new Error(`${inflight.count} request(s) still in flight after maxRequestMs (${o.maxRequestMs} ms)`))
      }
      inflightWaitMs = clock.now() - inflightStart
    } catch (err) {
      if (!signal.aborted) throw err
      outcome = signal.reason === CANCELLED ? 'cancelled' : 'cut'
      if (outcome === 'cut') this.#problem('offline sequence', new Error(`cut short in phase '${this.phase}' (${String((signal.reason as Error)?.message ?? signal.reason)}), ${inflight.count} request(s) in flight`))
    } finally {
      unwatch?.()
    }
    const endedAt = clock.now()
    return {
      outcome,
      reason: this.reason,
      startedAt: this.startedAt,
      deregisteredAt: this.deregisteredAt,
      windowMs: o.window.totalMs,
      windowEndedAt,
      endedEarly,
      sidecarMs,
      inflightWaitMs,
      endedAt,
      totalMs: endedAt - this.startedAt,
      requestsWhileDraining: inflight.total - this.requestsAtStart,
      inflightAtEnd: inflight.count,
      problems: [...this.problems]
    }
  }

  async #step (step: ResolvedLifecycleOptions['afterWindow'][number], signal: AbortSignal): Promise<void> {
    const { clock, logger } = this.#ctx
    const started = clock.now()
    try {
      await step.run({ signal, clock, logger, problem: (err) => this.#problem(step.name, err) })
      logger.info({ lameduck: { step: step.name, ms: clock.now() - started } }, `lameduck: ${step.name} done`)
    } catch (err) {
      if (signal.aborted) throw err
      this.#problem(step.name, err)
    }
  }
}
