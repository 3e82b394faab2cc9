import { sleep, type Clock } from './clock.ts'
import { redactText } from './redact.ts'
import type { DrainPhase } from './drain-phases.ts'
import type { InFlightTracker } from './inflight.ts'
import type { ResolvedLifecycleOptions } from './lifecycle-options.ts'
import type { Deregistration, DrainProgress, OfflineReport, PhaseChange, Problem } from './lifecycle-types.ts'
import type { Logger } from './logger.ts'
import { planWindow, type EvidenceReading, type WindowTerm } from './window-evidence.ts'

/** The abort reason online() uses: the sequence ends 'cancelled' rather than 'cut'. */
export const CANCELLED = Symbol('lameduck.cancelled')

/** What the lifecycle learns from each deregistration attempt. */
export interface DeregistrationHooks {
  /** Attempt `attempt` (1-based) is about to be sent. */
  attempt(attempt: number): void
  failed(err: unknown, attempt: number, delayMs: number): void
}

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
   * nothing to deregister; rejects on abort or on an error no retry can fix.
   */
  deregister(signal: AbortSignal, hooks: DeregistrationHooks): Promise<boolean> | false
  /** The sequence entered a phase (the lifecycle emits it as 'phase'). */
  phase(change: PhaseChange): void
}

/**
 * One run of the offline sequence: deregister (in the background, retried), serve
 * while the registry has not confirmed (phase `deregistering`, bounded by the
 * shutdown budget), serve through the propagation window counted from the
 * confirmation (phase `window`, ended early only by the earlyOffline monitor),
 * then the afterWindow steps (sidecar), then in-flight -> 0.
 */
export class DrainSequence {
  readonly reason: string
  readonly startedAt: number
  readonly abort = new AbortController()
  readonly requestsAtStart: number
  /** The latest the window phase may end: start + the budget left after the in-flight wait and the steps, never less than the window. */
  readonly latestWindowEndAt: number
  #phase: DrainPhase = 'deregistering'
  deregisteredAt: number | null = null
  windowEndsAt: number
  /** Live: background retries after the run keep updating it (the lifecycle shows it in /status). */
  readonly deregistration: Deregistration = { state: 'unconfirmed', attempts: 0, lastError: null, confirmedAt: null }
  readonly problems: Problem[] = []
  readonly #ctx: DrainContext
  #wake: () => void = () => {}
  /** The window's terms as things stand (frozen once the window phase ended), and why it ends then. */
  #terms: WindowTerm[] = []
  #windowReason = 'window elapsed'
  #windowOver = false

  constructor (ctx: DrainContext, reason: string) {
    const o = ctx.options
    this.#ctx = ctx
    this.reason = reason
    this.startedAt = ctx.clock.now()
    const stepsMs = o.afterWindow.reduce((sum, step) => sum + (step.budgetMs ?? 0), 0)
    this.latestWindowEndAt = this.startedAt + Math.max(o.window.totalMs, o.shutdownTimeoutMs - o.maxRequestMs - stepsMs)
    this.windowEndsAt = this.latestWindowEndAt
    this.requestsAtStart = ctx.inflight.total
  }

  get phase (): DrainPhase { return this.#phase }

  /** Moves to `phase` (forward only) and says why the one before ended. */
  #enter (phase: DrainPhase, reason: string): void {
    if (phase === this.#phase) return
    const previous = this.#phase
    this.#phase = phase
    this.#ctx.phase({ phase, previous, at: this.#ctx.clock.now(), reason })
  }

  progress (): DrainProgress {
    const windowTerms = this.#replan().map((t) => ({ ...t }))
    return {
      phase: this.#phase,
      reason: this.reason,
      startedAt: this.startedAt,
      deregisteredAt: this.deregisteredAt,
      windowEndsAt: this.windowEndsAt,
      latestWindowEndAt: this.latestWindowEndAt,
      deregistration: { ...this.deregistration },
      windowTerms,
      requestsWhileDraining: this.#ctx.inflight.total - this.requestsAtStart,
      earlyOfflinePending: this.#ctx.options.earlyOffline?.pending(this.#ctx.clock.now()) ?? null
    }
  }

  #problem = (step: string, err: unknown): void => { this.problems.push(this.#ctx.problem(step, err)) }

  async run (): Promise<OfflineReport> {
    const { clock, options: o, inflight } = this.#ctx
    const signal = this.abort.signal
    const unwatch = o.earlyOffline?.onChange(() => this.#wake())
    const unwatchEvidence = o.windowEvidence?.onChange(() => this.#wake())
    o.windowEvidence?.begin(this.startedAt)
    let outcome: OfflineReport['outcome'] = 'offline'
    let windowEndedAt: number | null = null
    let endedEarly = false
    let sidecarMs = 0
    let inflightWaitMs = 0
    try {
      // Retries go on after the window (while offline) until online() or close abort them.
      this.#ctx.phase({ phase: 'deregistering', previous: null, at: this.startedAt, reason: this.reason })
      this.#startDeregistration()
      endedEarly = await this.#serveWindow(signal)
      windowEndedAt = clock.now()
      const windowEnd = this.#endWindow(endedEarly, windowEndedAt)

      if (o.afterWindow.length > 0) this.#enter('sidecar', windowEnd)
      const sidecarStart = clock.now()
      for (const step of o.afterWindow) await this.#step(step, signal)
      sidecarMs = clock.now() - sidecarStart

      this.#enter('inflight', o.afterWindow.length === 0 ? windowEnd : `${o.afterWindow.map((s) => s.name).join(', ')} done`)
      const inflightStart = clock.now()
      await this.#waitInflight(signal)
      inflightWaitMs = clock.now() - inflightStart
    } catch (err) {
      if (!signal.aborted) throw err
      outcome = signal.reason === CANCELLED ? 'cancelled' : 'cut'
      if (outcome === 'cut') this.#problem('offline sequence', new Error(`cut short in phase '${this.#phase}' (${String((signal.reason as Error)?.message ?? signal.reason)}), ${inflight.count} request(s) in flight`))
    } finally {
      unwatch?.()
      unwatchEvidence?.()
    }
    const endedAt = clock.now()
    return {
      outcome,
      reason: this.reason,
      startedAt: this.startedAt,
      deregisteredAt: this.deregisteredAt,
      deregistration: { ...this.deregistration },
      windowMs: o.window.totalMs,
      windowEndedAt,
      endedEarly,
      windowTerms: this.#replan().map((t) => ({ ...t })),
      sidecarMs,
      inflightWaitMs,
      endedAt,
      totalMs: endedAt - this.startedAt,
      requestsWhileDraining: inflight.total - this.requestsAtStart,
      inflightAtEnd: inflight.count,
      problems: [...this.problems]
    }
  }

  /** Freezes the window's terms; says why it ended, and loudly when the registry never confirmed. */
  #endWindow (endedEarly: boolean, at: number): string {
    this.#replan()
    this.#windowOver = true
    if (this.deregistration.state === 'unconfirmed') {
      const d = this.deregistration
      this.#problem('deregister', new Error(`the registry has not confirmed deregistration within the shutdown budget (${d.attempts} attempt(s)${d.lastError === null ? '' : `, last error: ${d.lastError}`}); consumers may still route here (retrying in the background)`))
    }
    return endedEarly ? `earlyOffline: every consumer was told (${this.#ctx.options.earlyOffline?.pending(at) ?? 'none pending'})` : this.#windowReason
  }

  #startDeregistration (): void {
    const { clock } = this.#ctx
    const d = this.deregistration
    const deregistration = this.#ctx.deregister(this.abort.signal, {
      attempt: (attempt) => { d.attempts = attempt },
      failed: (err, attempt, delayMs) => {
        d.lastError = redactText(err instanceof Error ? err.message : String(err))
        this.#problem(`deregister (attempt ${attempt}, next in ${delayMs} ms)`, err)
      }
    })
    if (deregistration === false) { this.#nothingRegistered(); return }
    deregistration.then((deregistered) => {
      if (!deregistered) { this.#nothingRegistered(); this.#wake(); return }
      const at = clock.now()
      d.state = 'confirmed'
      d.confirmedAt = at
      this.deregisteredAt = at
      // The window runs from the moment consumers could start to see the change.
      this.#replan()
      if (this.#phase === 'deregistering') this.#enter('window', 'deregistration confirmed')
      this.#wake()
    }, (err: unknown) => {
      if (!this.abort.signal.aborted) this.#problem('deregister', err) // not retryable: stays unconfirmed
    })
  }

  #nothingRegistered (): void {
    this.deregistration.state = 'none'
    this.deregisteredAt = this.startedAt
    this.#replan()
    if (this.#phase === 'deregistering') this.#enter('window', 'nothing was registered: the window counts from the start')
  }

  /**
   * The window's end from its terms: the registry's (every part from the confirmation) and,
   * with windowEvidence, the evidence's (its part ends when the evidence shows it over, + its
   * rest; unavailable: the preset). Read live until the window phase ended, then frozen.
   */
  #replan (): WindowTerm[] {
    if (this.#windowOver) return this.#terms
    const o = this.#ctx.options
    const reading: EvidenceReading | null = o.windowEvidence === undefined ? null : readEvidence(o.windowEvidence, this.#ctx.clock.now())
    const plan = planWindow({ window: o.window, startedAt: this.startedAt, deregisteredAt: this.deregisteredAt, nothingRegistered: this.deregistration.state === 'none', latestWindowEndAt: this.latestWindowEndAt, evidence: o.windowEvidence, reading })
    this.windowEndsAt = plan.endsAt
    this.#terms = plan.terms
    this.#windowReason = plan.reason
    return this.#terms
  }

  /** Serves until windowEndsAt (which moves when the registry confirms or the evidence changes). True when earlyOffline ended it. */
  async #serveWindow (signal: AbortSignal): Promise<boolean> {
    const { clock, options: o } = this.#ctx
    for (;;) {
      signal.throwIfAborted()
      this.#replan()
      const now = clock.now()
      if (now >= this.windowEndsAt) return false
      if (o.earlyOffline !== undefined && this.deregisteredAt !== null && o.earlyOffline.pending(now) === null) return true
      const woken = new Promise<void>((resolve) => { this.#wake = resolve })
      const timer = new AbortController()
      await Promise.race([sleep(clock, this.windowEndsAt - now, AbortSignal.any([signal, timer.signal])).catch(() => {}), woken])
      timer.abort()
    }
  }

  async #waitInflight (signal: AbortSignal): Promise<void> {
    const { clock, options: o, inflight } = this.#ctx
    if (inflight.count === 0) return
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

/** An evidence's read() that throws is no evidence: the preset, with the reason. */
function readEvidence (e: NonNullable<ResolvedLifecycleOptions['windowEvidence']>, now: number): EvidenceReading {
  try {
    return e.read(now)
  } catch (err) {
    return { state: 'unavailable', detail: `read() threw: ${redactText(err instanceof Error ? err.message : String(err))}` }
  }
}
