import { backoffDelay, linearWarmupWeight, slowStartWeight } from '@lameduck/core'
import type { Instance, ParsedWarmup } from '@lameduck/core'
import type { Dispatcher } from 'undici'
import { InvalidOptionError } from '@lameduck/core'
import type { ResolvedOptions } from './options.ts'
import { shownText } from './instance-metadata.ts'

/**
 * When an instance's ramp starts, on the consumer's clock.
 *
 * An instance seen arriving ramps from that moment: the provider's clock plays no
 * part. Only instances already there in the first (non-empty) list the consumer saw
 * use `registeredAt`, and only as `elapsed = clamp(now - registeredAt, 0, window)`:
 * - in the future (provider clock ahead): elapsed 0, the ramp runs its full window
 *   on our clock instead of freezing at the floor until the provider's clock catches up;
 * - older than the window: warm. That is also what a provider clock behind ours
 *   looks like; the two cannot be told apart from one timestamp, and the exposure is
 *   limited to a consumer that starts while a provider is still warming;
 * - no `registeredAt`: warm (what Dubbo does without a timestamp).
 */
export function rampStart (now: number, firstSnapshot: boolean, registeredAt: number | undefined, windowMs: number): number {
  if (!firstSnapshot) return now
  if (registeredAt === undefined) return Number.NEGATIVE_INFINITY
  const elapsed = now - registeredAt
  if (elapsed < 0) return now
  if (elapsed >= windowMs) return Number.NEGATIVE_INFINITY
  return now - elapsed
}

/** One registration of one instance as the balancer tracks it. */
export class InstanceEntry {
  readonly key: string
  /** The id as shown in stats() and logs: cut when a registration sent an absurdly long one. */
  readonly shownId: string
  readonly hostPort: string
  readonly registeredAt: number | undefined
  readonly firstSnapshot: boolean
  instance: Instance
  weight: number
  warmupMs: number
  problems: string[]
  /** Consumer-clock time the ramp started; -Infinity when warm from the start. */
  rampStartedAt: number
  effectiveWeight = 0
  draining = false
  ejectedUntil = 0
  consecutiveFailures = 0
  ejections = 0
  picks = 0
  connectFailures = 0
  /** Bad metadata was logged for this registration. */
  warned = false
  #pools = new Map<string, Dispatcher>()
  readonly #options: ResolvedOptions

  /** `address` is the validated `host:port` (see address.ts). */
  constructor (key: string, address: string, instance: Instance, parsed: ParsedWarmup, firstSnapshot: boolean, now: number, options: ResolvedOptions) {
    this.key = key
    this.shownId = shownText(key)
    this.instance = instance
    this.hostPort = address
    this.registeredAt = parsed.registeredAt
    this.firstSnapshot = firstSnapshot
    this.#options = options
    this.weight = parsed.weight
    this.warmupMs = parsed.warmupMs
    this.problems = parsed.problems
    this.rampStartedAt = rampStart(now, firstSnapshot, parsed.registeredAt, this.windowMs)
  }

  /** Ramp length for the configured curve: slow start may override the published warmup. */
  get windowMs (): number {
    const o = this.#options
    return o.curve === 'slow-start' && o.slowStart.windowMs !== undefined ? o.slowStart.windowMs : this.warmupMs
  }

  /** Same registration (same address and registeredAt) with possibly new weight or warmup. */
  update (instance: Instance, parsed: ParsedWarmup): boolean {
    const changed = parsed.weight !== this.weight || parsed.warmupMs !== this.warmupMs
    this.instance = instance
    this.weight = parsed.weight
    this.warmupMs = parsed.warmupMs
    this.problems = parsed.problems
    return changed
  }

  /** Configured weight x warmup factor at `now`. */
  computeWeight (now: number): number {
    const weight = this.weight
    if (!(weight > 0)) return 0
    const windowMs = this.windowMs
    const elapsed = now - this.rampStartedAt
    if (windowMs <= 0 || elapsed >= windowMs) return weight
    const o = this.#options
    if (o.curve === 'linear') return Math.min(weight, linearWarmupWeight(elapsed, windowMs, weight))
    return slowStartWeight(elapsed, windowMs, weight, o.slowStart)
  }

  isWarming (now: number): boolean {
    return this.weight > 0 && now - this.rampStartedAt < this.windowMs
  }

  isEjected (now: number): boolean {
    return this.ejectedUntil > now
  }

  /** Records a failed connect; returns true when it ejects the instance. */
  connectFailed (now: number): boolean {
    this.connectFailures++
    this.consecutiveFailures++
    if (this.consecutiveFailures < this.#options.ejectAfter) return false
    this.consecutiveFailures = 0
    this.ejections++
    this.ejectedUntil = now + backoffDelay(this.ejections, this.#options.ejectBackoff)
    return true
  }

  /** A request reached the instance: connects work again. */
  connected (): void {
    this.consecutiveFailures = 0
    this.ejections = 0
  }

  /**
   * The keep-alive pool for `protocol` ('http:' or 'https:'), opened on first use
   * through the `factory` option. Throws when the factory does (the caller fails over).
   */
  pool (protocol: string, onDrain: (origin: URL) => void): Dispatcher {
    const pool = this.#pools.get(protocol)
    if (pool !== undefined && !(pool as { closed?: boolean }).closed && !(pool as { destroyed?: boolean }).destroyed) return pool
    const origin = `${protocol}//${this.hostPort}`
    const created: unknown = this.#options.factory(origin, this.#options.poolOptions)
    if (typeof created !== 'object' || created === null || typeof (created as Dispatcher).dispatch !== 'function') {
      throw new InvalidOptionError('factory', `returned ${created === null ? 'null' : typeof created} for ${origin}; it must return an undici Dispatcher (e.g. new Pool(origin, opts))`)
    }
    const dispatcher = created as Dispatcher
    dispatcher.on?.('drain', onDrain)
    this.#pools.set(protocol, dispatcher)
    return dispatcher
  }

  /** Gives the open pools to a new registration at the same address, keeping warm connections. */
  handOverPools (to: InstanceEntry): void {
    for (const [protocol, pool] of this.#pools) to.#pools.set(protocol, pool)
    this.#pools.clear()
  }

  /** Removes and returns the open pools; the caller closes them. */
  takePools (): Dispatcher[] {
    const pools = [...this.#pools.values()]
    this.#pools.clear()
    return pools
  }
}
