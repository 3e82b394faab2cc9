import { retry } from './backoff.ts'
import { Emitter } from './emitter.ts'
import { sleep, systemClock, type Clock } from './clock.ts'
import { ClosingError, InvalidOptionError, InvalidTransitionError, NotStartedError, TimeoutError } from './errors.ts'
import { InFlightTracker } from './inflight.ts'
import { silentLogger, type Logger } from './logger.ts'
import { warmupMetadata } from './metadata.ts'
import type { Instance, Registry, RegistryCallOptions } from './registry.ts'
import { canTransition, isRegistered, type LifecycleState } from './states.ts'
import { isResolvedLifecycleOptions, resolveLifecycleOptions } from './lifecycle-options.ts'
import type { Deregistration, DrainProgress, InstanceBase, LifecycleEvents, OfflineReport, Problem, StateChange } from './lifecycle-types.ts'
import type { CoreStatus } from './protocol.ts'
import { RegistryQueue } from './registry-queue.ts'
import { checkReadiness, type ReadinessState } from './readiness.ts'
import { redactedErrorCopy, redactText, redactValue } from './redact.ts'
import { CANCELLED, DrainSequence, type DeregistrationHooks } from './drain-sequence.ts'
import type { LifecycleOptions, ResolvedLifecycleOptions, StartupStep, TrustedLifecycleOptions } from './lifecycle-options.ts'
import type { PropagationWindow } from './windows.ts'
import { evidenceStatus } from './window-evidence.ts'

/**
 * The instance lifecycle: waits for readiness, registers, and on offline
 * deregisters, serves through the propagation window, drains the sidecar and
 * in-flight requests. Framework-free; the Fastify plugin wires HTTP to it.
 */
export class Lifecycle extends Emitter<LifecycleEvents> {
  readonly options: ResolvedLifecycleOptions
  readonly window: PropagationWindow
  readonly inflight: InFlightTracker
  readonly clock: Clock
  #log: Logger
  #state: LifecycleState = 'starting'
  #since: number
  #createdAt: number
  #base: InstanceBase | null = null
  #instance: Instance | null = null
  #registeredAt: number | null = null
  #phase: AbortController | null = null
  #startup: Promise<void> | null = null
  #registering: Promise<void> | null = null
  #drain: DrainSequence | null = null
  #drainDone: Promise<OfflineReport> | null = null
  #lastDrainAbort: AbortController | null = null
  /** The register() call in flight, if any: a drain or close must wait for it, or it would register behind their back. */
  #attempt: Promise<unknown> | null = null
  #closingDeregistration: Promise<void> | null = null
  #registry: RegistryQueue
  #lastReport: OfflineReport | null = null
  /** The latest drain's deregistration, live (background retries update it); null once registered again. */
  #deregistration: Deregistration | null = null
  #shuttingDown = false
  #problems: Problem[] = []
  #readiness: ReadinessState = { passing: false, lastFailure: null, checkedAt: null }
  #timings: Partial<Record<LifecycleState, number>> = {}
  /** Readiness and the startup steps passed once: only then may online() register without them. */
  #ready = false
  #startupFailed = false

  /** Given resolveLifecycleOptions()'s result, trusts it; anything else is checked here. */
  constructor (options: LifecycleOptions | TrustedLifecycleOptions = {}) {
    super()
    this.options = isResolvedLifecycleOptions(options) ? options : resolveLifecycleOptions(options)
    this.window = this.options.window
    this.clock = options.clock ?? systemClock
    this.inflight = options.inflight ?? new InFlightTracker()
    this.#log = options.logger ?? silentLogger
    this.#registry = new RegistryQueue({ clock: this.clock, timeoutMs: this.options.registryTimeoutMs, problem: (step, err) => this.#problem(step, err) })
    this.#createdAt = this.#since = this.clock.now()
    this.#timings.starting = this.#createdAt
  }

  get state (): LifecycleState { return this.#state }
  get instance (): Instance | null { return this.#instance }
  get registeredAt (): number | null { return this.#registeredAt }
  /** True while serving and younger (since registration) than `warmupMs`. */
  get warming (): boolean {
    return this.#state === 'serving' && this.#registeredAt !== null && this.clock.now() - this.#registeredAt < this.options.warmupMs
  }

  get shuttingDown (): boolean { return this.#shuttingDown }

  /** Progress of the running offline sequence, or null. */
  get drain (): DrainProgress | null {
    return this.#drain?.progress() ?? null
  }

  get lastReport (): OfflineReport | null { return this.#lastReport }

  /** Whether the latest offline sequence's deregistration was confirmed (live); null when none ran since registering. */
  get deregistration (): Deregistration | null { return this.#deregistration === null ? null : { ...this.#deregistration } }

  /**
   * Starts the online sequence for `base` (known once the server listens): delay,
   * readiness checks, startup steps (sidecar ready), registration. Resolves when
   * serving, or when offline()/close interrupted it; rejects on a readiness or step timeout.
   */
  start (base: InstanceBase): Promise<void> {
    if (this.#state !== 'starting') throw new InvalidTransitionError(this.#state, 'waiting', 'start() may be called once')
    this.#base = base
    this.#transition('waiting', 'start')
    return this.#runStartup(true)
  }

  /** The startup sequence (delay, readiness, steps, registration) in a new phase; failures are remembered for online(). */
  #runStartup (delay: boolean): Promise<void> {
    const phase = this.#phase = new AbortController()
    this.#startupFailed = false
    this.#startup = this.#online(phase.signal, delay).catch((err: unknown) => {
      if (phase.signal.aborted) return
      this.#startupFailed = true
      throw err
    })
    return this.#startup
  }

  /** Goes online again from draining or offline (re-registers). Joins a running startup. */
  async online (reason = 'api'): Promise<void> {
    if (this.#shuttingDown || this.#state === 'closing' || this.#state === 'stopped') throw new ClosingError(this.#state)
    switch (this.#state) {
      case 'starting':
        throw new NotStartedError('online')
      case 'waiting':
        // A startup that failed (readiness timed out) is run again, checks first.
        if (this.#startupFailed) return this.#runStartup(false)
        return this.#startup ?? undefined
      case 'registering':
        return this.#registering ?? undefined
      case 'serving':
        return
      case 'draining':
        this.#drain!.abort.abort(CANCELLED)
        break
      case 'offline':
        this.#lastDrainAbort?.abort(CANCELLED) // stop background deregistration retries
        // Taken offline before its startup passed: back to waiting, and through readiness and the steps first.
        if (!this.#ready) {
          this.#transition('waiting', reason)
          return this.#runStartup(false)
        }
        break
    }
    const phase = this.#phase = new AbortController()
    this.#registering = this.#register(phase.signal, reason).catch((err: unknown) => {
      if (phase.signal.aborted) return
      throw err
    })
    return this.#registering
  }

  /**
   * Starts the offline sequence, or joins the one running. Resolves with the
   * report when offline (or cancelled by online()).
   */
  offline (reason = 'api'): Promise<OfflineReport> {
    switch (this.#state) {
      case 'draining':
        return this.#drainDone!
      case 'offline':
        return Promise.resolve(this.#lastReport!)
      case 'starting':
        // No instance yet: an early /offline must not leave the lifecycle where start() can no longer run.
        return Promise.reject(new NotStartedError('offline'))
      case 'waiting': {
        this.#phase?.abort()
        const at = this.clock.now()
        const deregistration: Deregistration = { state: 'none', attempts: 0, lastError: null, confirmedAt: null }
        const report: OfflineReport = { outcome: 'skipped', reason, startedAt: at, deregisteredAt: null, deregistration, windowMs: 0, windowEndedAt: null, endedEarly: false, windowTerms: [], sidecarMs: 0, inflightWaitMs: 0, endedAt: at, totalMs: 0, requestsWhileDraining: 0, inflightAtEnd: this.inflight.count, problems: [] }
        this.#transition('offline', reason)
        this.#lastReport = report
        this.emit('offline', report)
        return Promise.resolve(report)
      }
      case 'registering':
      case 'serving':
        return this.#startDrain(reason)
      case 'closing':
      case 'stopped':
        if (this.#drain !== null) return this.#drainDone!
        return Promise.reject(new ClosingError(this.#state))
    }
  }

  /**
   * The graceful half of shutdown: runs (or joins) the offline sequence when the
   * instance may still be routed to, then moves to `closing`. The caller closes
   * its server and then calls stopped().
   */
  async shutdown (reason = 'shutdown'): Promise<OfflineReport | null> {
    this.#shuttingDown = true
    let report: OfflineReport | null = null
    if (isRegistered(this.#state)) {
      report = await this.offline(reason)
    } else if (this.#state === 'starting' || this.#state === 'waiting') {
      this.#phase?.abort()
    }
    this.beginClose(reason)
    return report ?? this.#lastReport
  }

  /**
   * Moves to `closing` at once from any state. A running drain is cut short;
   * a still-registered instance is deregistered as a best effort.
   */
  beginClose (reason = 'close'): void {
    if (this.#state === 'closing' || this.#state === 'stopped') return
    this.#shuttingDown = true
    this.#phase?.abort()
    if (this.#drain !== null) this.#drain.abort.abort(new Error(reason))
    else this.#lastDrainAbort?.abort(new Error(reason))
    this.#transition('closing', reason)
    const registry = this.options.registry
    // Not only from registering/serving: a drain whose deregistration was not confirmed
    // (registry down, or a register still in flight when the window ended) leaves the
    // instance registered too, and its retries stop here. A no-op when nothing is registered.
    if (registry !== undefined) {
      this.#closingDeregistration = (async () => {
        if (this.#attempt !== null) await this.#attempt
        const instance = this.#instance
        if (instance === null) return
        this.#instance = null
        try {
          await this.#registryCall('deregister', (call) => registry.deregister(instance, call))
          this.#confirmed()
          this.emit('deregistered', instance)
        } catch (err) { this.#problem('deregister', err) }
      })()
    }
  }

  /** Final state, after the server closed. Closes the registry. */
  async stopped (reason = 'closed'): Promise<void> {
    if (this.#state === 'stopped') return
    if (this.#state !== 'closing') this.beginClose(reason)
    await this.#closingDeregistration
    this.#transition('stopped', reason)
    try { await this.options.registry?.close() } catch (err) { this.#problem('registry close', err) }
    try { await this.options.windowEvidence?.close?.() } catch (err) { this.#problem('window evidence close', err) }
  }

  /** The lifecycle's part of the /status document; listeners add theirs with buildStatus(). */
  status (): CoreStatus {
    const now = this.clock.now()
    return {
      state: this.#state,
      since: this.#since,
      warming: this.warming,
      uptimeMs: now - this.#createdAt,
      registeredAt: this.#registeredAt,
      instance: this.#instance ?? this.#base,
      registry: this.#describeRegistry(),
      window: { preset: this.window.preset, totalMs: this.window.totalMs, breakdown: this.window.breakdown },
      windowEvidence: this.options.windowEvidence === undefined ? null : redactValue(evidenceStatus(this.options.windowEvidence, now)) as CoreStatus['windowEvidence'],
      maxRequestMs: this.options.maxRequestMs,
      inflight: this.inflight.count,
      requestsTotal: this.inflight.total,
      readiness: this.#readiness,
      drain: this.drain,
      deregistration: this.deregistration,
      lastOffline: this.#lastReport,
      problems: this.#problems.slice(-20),
      timings: this.#timings
    }
  }

  /** The adapter's describe() (a custom one's included), redacted; a describe() that throws says so. */
  #describeRegistry (): Record<string, unknown> | null {
    const registry = this.options.registry
    if (registry === undefined) return null
    if (typeof registry.describe !== 'function') return { type: 'custom' }
    try {
      return redactValue(registry.describe()) as Record<string, unknown>
    } catch (err) {
      return { type: 'custom', error: `describe() threw: ${redactText(err instanceof Error ? err.message : String(err))}` }
    }
  }

  #transition (to: LifecycleState, reason: string): void {
    const from = this.#state
    if (from === to) return
    if (!canTransition(from, to)) throw new InvalidTransitionError(from, to)
    const at = this.clock.now()
    const change: StateChange = { from, to, at, durationMs: at - this.#since, reason }
    this.#state = to
    this.#since = at
    this.#timings[to] = at
    this.#log.info({ lameduck: change }, `lameduck: ${from} \u2192 ${to} (${reason}, ${change.durationMs} ms in ${from})`)
    this.emit('state', change)
  }

  #problem (step: string, err: unknown): Problem {
    // A registry's or the app's error text may carry credentials: redacted before /status, the event and the log.
    const problem: Problem = { step, message: redactText(err instanceof Error ? err.message : String(err)), at: this.clock.now() }
    this.#problems.push(problem)
    if (this.#problems.length > 100) this.#problems.splice(0, this.#problems.length - 100)
    this.#log.warn({ lameduck: { problem }, err: err instanceof Error ? redactedErrorCopy(err) : problem.message }, `lameduck: ${step} failed: ${problem.message}`)
    this.emit('problem', problem)
    return problem
  }

  async #online (signal: AbortSignal, delay: boolean): Promise<void> {
    const o = this.options
    if (delay && o.delayMs > 0) await sleep(this.clock, o.delayMs, signal)
    await this.#waitReadiness(signal)
    for (const step of o.beforeRegister) { signal.throwIfAborted(); await this.#runStartupStep(step, signal) }
    signal.throwIfAborted()
    this.#ready = true
    await this.#register(signal, 'ready')
  }

  async #waitReadiness (signal: AbortSignal): Promise<void> {
    const o = this.options
    if (o.readiness.length === 0) { this.#readiness.passing = true; return }
    const deadline = this.clock.now() + o.readinessTimeoutMs
    for (;;) {
      signal.throwIfAborted()
      const { failure, unsettled } = await checkReadiness(o.readiness, signal, this.clock, deadline)
      this.#readiness.checkedAt = this.clock.now()
      this.#readiness.lastFailure = failure
      this.#readiness.passing = failure === null
      if (failure === null) return
      if (unsettled || this.clock.now() + o.readinessIntervalMs > deadline) {
        const err = new TimeoutError(`readiness checks (last failure: ${failure})`, o.readinessTimeoutMs)
        this.#log.error({ lameduck: { readiness: this.#readiness } }, `lameduck: ${err.message}`)
        throw err
      }
      this.#log.debug({ lameduck: { readiness: failure } }, 'lameduck: readiness check failed, retrying')
      await sleep(this.clock, o.readinessIntervalMs, signal)
    }
  }

  async #runStartupStep (step: StartupStep, signal: AbortSignal): Promise<void> {
    const started = this.clock.now()
    await step.run({ signal, clock: this.clock, logger: this.#log })
    this.#log.info({ lameduck: { step: step.name, ms: this.clock.now() - started } }, `lameduck: ${step.name} done`)
  }

  async #register (signal: AbortSignal, reason: string): Promise<void> {
    signal.throwIfAborted()
    this.#transition('registering', reason)
    const o = this.options
    const started = this.clock.now()
    await retry(async () => {
      const registeredAt = this.clock.now()
      const instance = this.#instanceAt(registeredAt)
      if (o.registry !== undefined) {
        const registry = o.registry
        const attempt = this.#registryCall('register', (call) => registry.register(instance, call), signal)
        this.#attempt = attempt.catch(() => {})
        await attempt
      }
      // Recorded even when offline()/close interrupted us meanwhile: they wait for
      // this attempt and then deregister what it registered.
      this.#instance = instance
      this.#registeredAt = registeredAt
      this.#deregistration = null
      signal.throwIfAborted()
    }, { signal, clock: this.clock, backoff: o.registryBackoff, retryable, onError: (err, attempt, delayMs) => this.#problem(`register (attempt ${attempt}, next in ${delayMs} ms)`, err) })
    this.#transition('serving', `registered in ${this.clock.now() - started} ms`)
    this.emit('registered', this.#instance!)
  }

  /** A deregistration confirmed outside a drain's retries (the last one at close): /status says so. */
  #confirmed (): void {
    const d = this.#deregistration
    if (d === null || d.state !== 'unconfirmed') return
    d.attempts++
    d.state = 'confirmed'
    d.confirmedAt = this.clock.now()
  }

  #instanceAt (registeredAt: number): Instance {
    const base = this.#base
    if (base === null) throw new NotStartedError('register')
    return {
      id: base.id,
      service: base.service,
      host: base.host,
      port: base.port,
      status: 'UP',
      metadata: { ...base.metadata, ...warmupMetadata({ registeredAt, warmupMs: this.options.warmupMs, weight: this.options.weight }) }
    }
  }

  #startDrain (reason: string): Promise<OfflineReport> {
    this.#phase?.abort()
    const drain = new DrainSequence({
      clock: this.clock,
      logger: this.#log,
      options: this.options,
      inflight: this.inflight,
      problem: (step, err) => this.#problem(step, err),
      deregister: (signal, hooks) => this.#deregister(signal, hooks),
      phase: (change) => { this.emit('phase', change) }
    }, reason)
    this.#drain = drain
    this.#lastDrainAbort = drain.abort
    this.#deregistration = drain.deregistration
    this.#transition('draining', reason)
    this.options.earlyOffline?.begin(drain.startedAt)
    this.#drainDone = drain.run().then((report) => {
      // online() may have cancelled this run and offline() started a newer one meanwhile.
      if (this.#drain === drain) this.#drain = null
      this.#lastReport = report
      if (report.outcome === 'offline') this.#transition('offline', report.endedEarly ? 'drained (window ended early)' : 'drained')
      this.#log.info({ lameduck: { offline: report } }, `lameduck: offline sequence ${report.outcome} after ${report.totalMs} ms`)
      this.emit('offline', report)
      return report
    })
    return this.#drainDone
  }

  #registryCall (op: 'register' | 'deregister', call: (options: RegistryCallOptions) => Promise<void>, signal?: AbortSignal): Promise<void> {
    return this.#registry.call(op, call, signal)
  }

  /**
   * Deregisters what is (or is being) registered, retrying until confirmed or
   * aborted. `false` at once when there is nothing to deregister.
   */
  #deregister (signal: AbortSignal, hooks: DeregistrationHooks): Promise<boolean> | false {
    if (this.options.registry === undefined || (this.#attempt === null && this.#instance === null)) return false
    return this.#deregisterNow(signal, hooks)
  }

  async #deregisterNow (signal: AbortSignal, hooks: DeregistrationHooks): Promise<boolean> {
    const o = this.options
    if (this.#attempt !== null) await this.#attempt
    const instance = this.#instance
    if (o.registry === undefined || instance === null) return false
    await retry(async (attempt) => {
      hooks.attempt(attempt)
      await this.#registryCall('deregister', (call) => o.registry!.deregister(instance, call), signal)
    }, { signal, clock: this.clock, backoff: o.registryBackoff, retryable, onError: (err, attempt, delayMs) => hooks.failed(err, attempt, delayMs) })
    this.#instance = null
    this.#registeredAt = null
    this.emit('deregistered', instance)
    return true
  }
}

/** Errors no retry can fix: a bad option or a call before start(). Everything else (network, 5xx, timeouts) is retried. */
function retryable (err: unknown): boolean {
  return !(err instanceof InvalidOptionError || err instanceof NotStartedError)
}

export function createLifecycle (options?: LifecycleOptions): Lifecycle {
  return new Lifecycle(options)
}

export type { Registry }
export type { DrainProgress, InstanceBase, LifecycleEvents, OfflineReport, Problem, StateChange }
