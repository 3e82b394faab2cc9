import type { Clock, Timer } from './clock.ts'
import type { Lifecycle } from './lifecycle.ts'
import type { StateChange } from './lifecycle-types.ts'
import type { Logger } from './logger.ts'
import type { LifecycleObserver, ObserverContext } from './observer.ts'
import { METADATA_KEYS, parseWarmupMetadata } from './metadata.ts'
import type { Instance } from './registry.ts'
import { checkKeys, duration, record, show } from './validate.ts'
import { InvalidOptionError } from './errors.ts'
import type { WindowParts } from './windows.ts'

// Warmup for consumers that read only a weight (Spring Cloud LoadBalancer's
// weighted supplier reads metadata `weight`; Nacos clients the instance
// weight): the provider republishes a growing weight itself. A collaborator on
// the lifecycle's events, not a part of it: the adapter asks it which weight a
// registration carries and hands it a way to publish the next one.

/** More steps than this only multiply registry writes: consumers pick by weight ratios a few percent apart. */
export const RAMP_MAX_STEPS = 20

export interface WeightRampOptions {
  /**
   * Time between two published weights. Default: the slowest periodic refresh in the
   * propagation window (server cache, consumer fetch, balancer refresh), since a
   * consumer sees at most one new weight per refresh; never less than warmupMs / 20.
   */
  stepMs?: number
}

export interface WeightRampStep { /** ms after registration */ atMs: number, weight: number }

export interface WeightRampSchedule {
  /** The consumer-visible refresh the spacing was derived from (0 when the window names none). */
  refreshMs: number
  stepMs: number
  /** steps[0] is what the registration carries; the last is the full weight at warmupMs. */
  steps: WeightRampStep[]
}

/** The refresh a consumer sees changes at: the slowest of the periodic hops of the window. */
export function consumerRefreshMs (parts: WindowParts): number {
  return Math.max(parts.serverCacheMs, parts.clientFetchMs, parts.balancerRefreshMs)
}

/**
 * The published weights: the warmup cut into equal steps no closer than the
 * consumers' refresh, each step carrying the linear (Dubbo) curve's value at its
 * middle (to a twentieth of the weight, see quantum()), so the share a consumer gives
 * averages the balancer's own ramp; the full weight by warmupMs. No warmup (or weight
 * 0): the full weight at once.
 */
export function weightRampSchedule (input: { warmupMs: number, weight: number, window: WindowParts, stepMs?: number }): WeightRampSchedule {
  const { warmupMs, weight } = input
  const refreshMs = consumerRefreshMs(input.window)
  const stepMs = Math.max(input.stepMs ?? refreshMs, warmupMs / RAMP_MAX_STEPS)
  if (!(warmupMs > 0) || !(weight > 0) || !(stepMs > 0)) return { refreshMs, stepMs, steps: [{ atMs: 0, weight }] }
  const n = Math.max(1, Math.floor(warmupMs / stepMs))
  const q = quantum(weight)
  const steps: WeightRampStep[] = []
  for (let i = 0; i < n; i++) {
    const w = Math.min(weight, q * Math.max(1, Math.round(weight * (i + 0.5) / n / q)))
    if (steps.at(-1)?.weight !== w) steps.push({ atMs: Math.round(i * warmupMs / n), weight: w })
  }
  if (steps.at(-1)!.weight !== weight) steps.push({ atMs: warmupMs, weight })
  return { refreshMs, stepMs: warmupMs / n, steps }
}

/**
 * The unit ramp weights are multiples of. Spring's weighted supplier expands the instance
 * list by weight / gcd(all weights) and round-robins through it, the small weight's slots
 * bunched at the start: with 100, 100 and 37 a cycle is 237 picks, and a consumer that makes
 * fewer picks per cache refresh sees 0 % or 33 % depending on where it stands. Multiples of a
 * twentieth of the weight keep the gcd with its full-weight peers at that twentieth: cycles of
 * at most 60 picks. Whole numbers always (Spring parses `weight` with Integer.parseInt).
 */
function quantum (weight: number): number {
  if (Number.isInteger(weight / RAMP_MAX_STEPS)) return weight / RAMP_MAX_STEPS
  return Number.isInteger(weight) && weight >= 1 ? 1 : weight / RAMP_MAX_STEPS
}

/**
 * The metadata a ramping registration carries: Dubbo's `weight` is the ramp's,
 * and Dubbo's `warmup` is 0 so a Dubbo-style consumer does not ramp it a second
 * time. `lameduck.weight` and `lameduck.warmup` stay: lameduck's balancer ramps
 * from them and never multiplies in the ramped `weight`.
 */
export function rampedMetadata (metadata: Record<string, string>, weight: number): Record<string, string> {
  return { ...metadata, [METADATA_KEYS.dubboWeight]: String(weight), [METADATA_KEYS.dubboWarmup]: '0' }
}

/** Validates an adapter's `weightRamp` option: true, false, or { stepMs }. Null when off. */
export function resolveWeightRamp (option: string, value: unknown): WeightRampOptions | null {
  if (value === undefined || value === false) return null
  if (value === true) return {}
  if (typeof value !== 'object' || value === null) throw new InvalidOptionError(option, `must be true, false or { stepMs }, got ${show(value)}`)
  const o = record(option, value, '{ stepMs: 35000 }')
  checkKeys(option, o, { stepMs: true })
  return o.stepMs === undefined ? {} : { stepMs: duration(`${option}.stepMs`, o.stepMs, 0, { positive: true }) }
}

/** Publishes `weight` for the registration `instance` (Eureka: PUT .../metadata; Nacos: register again). */
export type WeightPublisher = (instance: Instance, weight: number) => Promise<void>

interface Ramp { registeredAt: number, instance: Instance, schedule: WeightRampSchedule, index: number, timer: Timer | null, stopped: boolean }

export interface WeightRampStatus {
  attached: boolean
  registeredAt: number | null
  /** Steps published so far (the registration's included), of `of`. */
  step: number
  of: number
  weight: number | null
  stepMs: number | null
  done: boolean
  stopped: boolean
  publishFailures: number
}

/**
 * The ramp as a lifecycle observer ({ name, attach }). A registration (a new
 * `registeredAt`) starts it at the first step; every later step is published
 * while the lifecycle is serving, and the first move out of serving (draining,
 * closing) ends it for good. The same registration registered again (a
 * heartbeat's 404, a Nacos beat) carries the weight reached, never the first step.
 */
export class WeightRamp implements LifecycleObserver {
  readonly name = 'weight ramp'
  readonly #options: WeightRampOptions
  readonly #publish: WeightPublisher
  #lifecycle: Lifecycle | null = null
  #log: Logger | null = null
  #ramp: Ramp | null = null
  #failures = 0
  #warnedDetached = false
  #warnedOther = false

  /** `logger` until attached (the adapter's): says so when a registration comes before any lifecycle. */
  constructor (options: WeightRampOptions, publish: WeightPublisher, logger?: Logger) {
    this.#options = options
    this.#publish = publish
    this.#log = logger ?? null
  }

  attach (ctx: ObserverContext): () => void {
    if (this.#lifecycle !== null) throw new InvalidOptionError('weightRamp', 'is attached to a lifecycle already: one registry serves one app')
    const { lifecycle, logger } = ctx
    this.#lifecycle = lifecycle
    this.#log = logger
    const onRegistered = (instance: Instance): void => { this.#registered(instance) }
    const onState = (change: StateChange): void => { if (change.to !== 'serving') this.#stop(`lifecycle ${change.to}`) }
    lifecycle.on('registered', onRegistered)
    lifecycle.on('state', onState)
    return () => {
      lifecycle.off('registered', onRegistered)
      lifecycle.off('state', onState)
      this.#stop('detached')
      this.#lifecycle = null
    }
  }

  /**
   * The weight `instance` is to be registered with, or null for no ramp (no
   * warmup, weight 0, or not attached to a lifecycle: warned once).
   */
  weightFor (instance: Instance): number | null {
    const lifecycle = this.#lifecycle
    if (lifecycle === null) {
      if (!this.#warnedDetached) this.#log?.warn({}, 'lameduck: weightRamp is set but not attached to a lifecycle (pass the registry to the plugin, or attach registry.weightRamp); registering the full weight')
      this.#warnedDetached = true
      return null
    }
    // Only the attached lifecycle's instance ramps: another one's steps would never be published (it would stay at the first).
    if (instance.id !== lifecycle.status().instance?.id) {
      if (!this.#warnedOther) this.#log?.warn({ lameduck: { instance: instance.id } }, `lameduck: weightRamp ramps the instance of the lifecycle it is attached to; ${instance.id} registers at the full weight (one registry with weightRamp per app)`)
      this.#warnedOther = true
      return null
    }
    const parsed = parseWarmupMetadata(instance.metadata)
    const ramp = this.#ramp
    if (ramp !== null && !ramp.stopped && parsed.registeredAt === ramp.registeredAt) return ramp.schedule.steps[ramp.index]!.weight
    const schedule = this.#schedule(lifecycle, parsed.warmupMs, parsed.weight)
    return schedule.steps.length > 1 ? schedule.steps[0]!.weight : null
  }

  describe (): WeightRampStatus {
    const r = this.#ramp
    return {
      attached: this.#lifecycle !== null,
      registeredAt: r?.registeredAt ?? null,
      step: r === null ? 0 : r.index + 1,
      of: r?.schedule.steps.length ?? 0,
      weight: r === null ? null : r.schedule.steps[r.index]!.weight,
      stepMs: r?.schedule.stepMs ?? null,
      done: r !== null && r.index === r.schedule.steps.length - 1,
      stopped: r?.stopped ?? false,
      publishFailures: this.#failures
    }
  }

  #schedule (lifecycle: Lifecycle, warmupMs: number, weight: number): WeightRampSchedule {
    return weightRampSchedule({ warmupMs, weight, window: lifecycle.window.parts, ...this.#options })
  }

  #registered (instance: Instance): void {
    const lifecycle = this.#lifecycle!
    const parsed = parseWarmupMetadata(instance.metadata)
    if (parsed.registeredAt === undefined || parsed.registeredAt === this.#ramp?.registeredAt) return
    this.#stop('registered again')
    const schedule = this.#schedule(lifecycle, parsed.warmupMs, parsed.weight)
    if (schedule.steps.length < 2) { this.#ramp = null; return }
    const ramp: Ramp = { registeredAt: parsed.registeredAt, instance, schedule, index: 0, timer: null, stopped: false }
    this.#ramp = ramp
    this.#log?.info({ lameduck: { weightRamp: schedule } }, `lameduck: weight ramp ${schedule.steps.map((s) => s.weight).join(' \u2192 ')}, a step every ${Math.round(schedule.stepMs)} ms (consumers refresh every ${schedule.refreshMs} ms)`)
    this.#next(ramp, lifecycle.clock)
  }

  #next (ramp: Ramp, clock: Clock): void {
    const step = ramp.schedule.steps[ramp.index + 1]
    if (step === undefined || ramp.stopped) return
    ramp.timer = clock.setTimeout(() => {
      ramp.timer = null
      // The state is checked when the step is due: a drain started since cancels it (its 'state' event came first).
      if (ramp.stopped || this.#lifecycle?.state !== 'serving') return
      ramp.index++
      this.#send(ramp, step.weight)
      this.#next(ramp, clock)
    }, Math.max(0, ramp.registeredAt + step.atMs - clock.now()))
    ramp.timer.unref?.()
  }

  #send (ramp: Ramp, weight: number): void {
    const failed = (err: unknown): void => {
      this.#failures++
      this.#log?.warn({ err, lameduck: { weightRamp: { weight } } }, `lameduck: publishing weight ${weight} failed: ${(err as Error)?.message ?? String(err)}; the next step publishes the weight then due`)
    }
    // Issued now, while serving: the adapter queues it before any deregistration issued later.
    try {
      this.#publish(ramp.instance, weight).catch(failed)
    } catch (err) { failed(err) }
  }

  #stop (why: string): void {
    const ramp = this.#ramp
    if (ramp === null || ramp.stopped) return
    ramp.stopped = true
    if (ramp.timer !== null) this.#lifecycle?.clock.clearTimeout(ramp.timer)
    ramp.timer = null
    if (ramp.index < ramp.schedule.steps.length - 1) this.#log?.info({ lameduck: { weightRamp: { weight: ramp.schedule.steps[ramp.index]!.weight } } }, `lameduck: weight ramp stopped at step ${ramp.index + 1} of ${ramp.schedule.steps.length} (${why})`)
  }
}
