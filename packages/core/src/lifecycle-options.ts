import type { BackoffOptions } from './backoff.ts'
import type { Clock } from './clock.ts'
import { InvalidOptionError } from './errors.ts'
import type { InFlightTracker } from './inflight.ts'
import type { Logger } from './logger.ts'
import type { Registry } from './registry.ts'
import { defaultShutdownTimeoutMs } from './shutdown-budget.ts'
import { assertDuration, backoff, checkKeys, duration, show } from './validate.ts'
import { propagationWindow, type PropagationWindow, type WindowsInput } from './windows.ts'
import { windowEvidence, type WindowEvidence } from './window-evidence.ts'

/** Passes unless it throws or resolves to `false`. */
export type ReadinessCheck = (signal: AbortSignal) => unknown

/** Runs before registering, after readiness (e.g. wait for the sidecar to be LIVE). Throw to fail startup. */
export interface StartupStep {
  name: string
  run(ctx: { signal: AbortSignal, clock: Clock, logger: Logger }): Promise<void>
}

/** Runs after the propagation window, before the in-flight wait (e.g. drain the sidecar). Errors are reported, never fatal. */
export interface DrainStep {
  name: string
  /**
   * The longest this step takes (e.g. the sidecar drain timeout). Reserved out of
   * `shutdownTimeoutMs`: an unconfirmed deregistration may not stretch the window into it.
   */
  budgetMs?: number
  run(ctx: { signal: AbortSignal, clock: Clock, logger: Logger, problem(err: unknown): void }): Promise<void>
}

/** Lets the window end early when every consumer has been told (see earlyOffline). */
export interface EarlyOfflineMonitor {
  begin(now: number): void
  /** null when the window may end now, else the condition still pending. */
  pending(now: number): string | null
  /** Calls `fn` when pending() may have changed. Returns an unsubscribe function. */
  onChange(fn: () => void): () => void
}

export interface LifecycleOptions {
  registry?: Registry
  /** Propagation window: a preset, parts, or a computed window. Default 'none'. */
  windows?: WindowsInput | PropagationWindow
  /** ms to wait after listening before the readiness checks start. Default 0. */
  delayMs?: number
  readiness?: ReadinessCheck[]
  /** Startup fails if readiness checks have not all passed by then. Default 60 000. */
  readinessTimeoutMs?: number
  /** Pause between failed readiness rounds. Default 500. */
  readinessIntervalMs?: number
  beforeRegister?: StartupStep[]
  afterWindow?: DrainStep[]
  /** Warmup published as metadata. Default 0 (none). */
  warmupMs?: number
  /** Weight published as metadata. Default 100. */
  weight?: number
  /** Longest request served: the bound of the in-flight wait. Default 30 000. */
  maxRequestMs?: number
  /** Bound on one registry call. Default 10 000. */
  registryTimeoutMs?: number
  /**
   * The shutdown budget: bounds how long an offline sequence keeps serving and
   * retrying while the registry has not confirmed deregistration. The window
   * phase ends at the latest at start + shutdownTimeoutMs - maxRequestMs - the
   * afterWindow steps' budgetMs (never before start + window). Default
   * defaultShutdownTimeoutMs(window, { maxRequestMs, sidecarDrainTimeoutMs: sum of budgetMs }).
   */
  shutdownTimeoutMs?: number
  registryBackoff?: BackoffOptions
  earlyOffline?: EarlyOfflineMonitor
  /**
   * Evidence for one window part instead of its fixed guess (e.g. observedWindow() from
   * @lameduck/kubernetes for endpointLagMs): that term ends when the evidence shows it over, plus
   * its rest; the preset's part when the evidence is unavailable. Closed when the lifecycle stops.
   */
  windowEvidence?: WindowEvidence
  inflight?: InFlightTracker
  clock?: Clock
  logger?: Logger
}

/** Marks options made by resolveLifecycleOptions(): the Lifecycle trusts them instead of checking again. */
export const RESOLVED_LIFECYCLE: unique symbol = Symbol('lameduck.resolvedLifecycleOptions')

export interface ResolvedLifecycleOptions {
  readonly [RESOLVED_LIFECYCLE]: true
  registry: Registry | undefined
  window: PropagationWindow
  delayMs: number
  readiness: ReadinessCheck[]
  readinessTimeoutMs: number
  readinessIntervalMs: number
  beforeRegister: StartupStep[]
  afterWindow: DrainStep[]
  warmupMs: number
  weight: number
  maxRequestMs: number
  registryTimeoutMs: number
  shutdownTimeoutMs: number
  registryBackoff: BackoffOptions | undefined
  earlyOffline: EarlyOfflineMonitor | undefined
  windowEvidence: WindowEvidence | undefined
}

/** Resolved options plus the runtime parts a host creates itself (trusted, not checked). */
export type TrustedLifecycleOptions = ResolvedLifecycleOptions & Pick<LifecycleOptions, 'inflight' | 'clock' | 'logger'>

export function isResolvedLifecycleOptions (o: LifecycleOptions | TrustedLifecycleOptions): o is TrustedLifecycleOptions {
  return (o as Partial<ResolvedLifecycleOptions>)[RESOLVED_LIFECYCLE] === true
}

function isComputedWindow (w: unknown): w is PropagationWindow {
  return typeof w === 'object' && w !== null && 'totalMs' in w && 'breakdown' in w
}

/** Every option of createLifecycle(), checked against the type by the compiler. */
const LIFECYCLE_KEYS = {
  registry: true,
  windows: true,
  delayMs: true,
  readiness: true,
  readinessTimeoutMs: true,
  readinessIntervalMs: true,
  beforeRegister: true,
  afterWindow: true,
  warmupMs: true,
  weight: true,
  maxRequestMs: true,
  registryTimeoutMs: true,
  shutdownTimeoutMs: true,
  registryBackoff: true,
  earlyOffline: true,
  windowEvidence: true,
  inflight: true,
  clock: true,
  logger: true
} satisfies Record<keyof LifecycleOptions, true>

/**
 * Checks createLifecycle() options once. A host that wraps the lifecycle (the
 * node engine) calls it at its own edge, with the names its users write, and
 * passes the result to the Lifecycle, which then does not check again.
 */
export function resolveLifecycleOptions (o: LifecycleOptions): ResolvedLifecycleOptions {
  if (typeof o !== 'object' || o === null) throw new InvalidOptionError('options', `expected an object, got ${show(o)}`)
  checkKeys('', o, LIFECYCLE_KEYS)
  if (o.registry !== undefined) {
    const r = o.registry as unknown as Record<string, unknown>
    for (const m of ['register', 'deregister', 'close']) {
      if (typeof r?.[m] !== 'function') throw new InvalidOptionError('registry', `must implement register(), deregister() and close(); '${m}' is missing. Use eurekaRegistry(), nacosRegistry() or memoryRegistry()`)
    }
  }
  const readiness = o.readiness ?? []
  if (!Array.isArray(readiness) || readiness.some((c) => typeof c !== 'function')) {
    throw new InvalidOptionError('readiness', 'must be an array of functions, e.g. [async () => db.ping()]')
  }
  const weight = o.weight ?? 100
  if (typeof weight !== 'number' || !Number.isFinite(weight) || weight < 0) {
    throw new InvalidOptionError('weight', `must be a non-negative number, got ${show(weight)}`)
  }
  for (const [name, list] of [['beforeRegister', o.beforeRegister], ['afterWindow', o.afterWindow]] as const) {
    if (list !== undefined && (!Array.isArray(list) || list.some((s) => typeof s?.run !== 'function'))) {
      throw new InvalidOptionError(name, 'must be an array of { name, run(ctx) } steps')
    }
  }
  const afterWindow = o.afterWindow ?? []
  afterWindow.forEach((step, i) => { if (step.budgetMs !== undefined) assertDuration(`afterWindow[${i}].budgetMs`, step.budgetMs) })
  const window = isComputedWindow(o.windows) ? o.windows : propagationWindow(o.windows ?? 'none')
  const maxRequestMs = duration('maxRequestMs', o.maxRequestMs, 30_000)
  const stepsMs = afterWindow.reduce((sum, step) => sum + (step.budgetMs ?? 0), 0)
  return {
    [RESOLVED_LIFECYCLE]: true,
    registry: o.registry,
    window,
    delayMs: duration('delayMs', o.delayMs, 0),
    readiness,
    readinessTimeoutMs: duration('readinessTimeoutMs', o.readinessTimeoutMs, 60_000),
    readinessIntervalMs: duration('readinessIntervalMs', o.readinessIntervalMs, 500),
    beforeRegister: o.beforeRegister ?? [],
    afterWindow,
    warmupMs: duration('warmupMs', o.warmupMs, 0),
    weight,
    maxRequestMs,
    registryTimeoutMs: duration('registryTimeoutMs', o.registryTimeoutMs, 10_000),
    shutdownTimeoutMs: duration('shutdownTimeoutMs', o.shutdownTimeoutMs, defaultShutdownTimeoutMs(window.totalMs, { maxRequestMs, sidecarDrainTimeoutMs: stepsMs })),
    registryBackoff: o.registryBackoff === undefined ? undefined : backoff('registryBackoff', o.registryBackoff),
    earlyOffline: o.earlyOffline,
    windowEvidence: windowEvidence('windowEvidence', o.windowEvidence)
  }
}
