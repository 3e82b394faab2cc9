// One service as the gRPC consumer sees it: the discovery list (UP instances with
// a routable address), each instance's warmup ramp on the consumer's clock, and
// which instances said they are leaving. Resolvers of every channel to the
// service read it; it outlives channels (a channel that goes idle and back keeps
// the ramps and the leaving marks).
import { linearWarmupWeight, parseWarmupMetadata, slowStartWeight, truncateText } from '@lameduck/core'
import type { Instance, Timer } from '@lameduck/core'
import type { ResolvedClientOptions } from './options.ts'

/** Published weights outside this range are clamped into it (0 stays 0: never picked), as @lameduck/balancer does. */
const WEIGHT_RANGE = { min: 0.01, max: 10_000 }

export interface ViewEntry {
  /** `host:port` (IPv6 in brackets): the subchannel address. */
  readonly key: string
  readonly id: string
  readonly host: string
  readonly port: number
  readonly registeredAt: number | undefined
  weight: number
  warmupMs: number
  /** Consumer-clock time the ramp started; -Infinity when warm from the start. */
  readonly rampStartedAt: number
  /** The instance answered a call with a leaving x-lameduck-state. */
  leaving: boolean
}

/**
 * When a ramp starts, on the consumer's clock: an instance seen arriving ramps from
 * then; one already listed when the consumer started uses `registeredAt`, clamped to
 * [0, window], so a provider clock ahead or behind can neither freeze nor skip a ramp
 * (the rule @lameduck/balancer follows).
 */
export function rampStart (now: number, firstList: boolean, registeredAt: number | undefined, windowMs: number): number {
  if (!firstList) return now
  if (registeredAt === undefined) return Number.NEGATIVE_INFINITY
  const elapsed = now - registeredAt
  if (elapsed < 0) return now
  return elapsed >= windowMs ? Number.NEGATIVE_INFINITY : now - elapsed
}

function addressOf (instance: Instance): { host: string, port: number, key: string } | null {
  const { host, port } = instance
  if (!Number.isInteger(port) || port < 1 || port > 65_535) return null
  if (typeof host !== 'string' || host === '' || host.length > 253 || /[\s/@?#]/.test(host)) return null
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  return { host: bare, port, key: bare.includes(':') ? `[${bare}]:${port}` : `${bare}:${port}` }
}

export class ServiceView {
  readonly service: string
  #entries = new Map<string, ViewEntry>()
  #listeners = new Set<() => void>()
  #seenList = false
  #protecting = false
  #notifyScheduled = false
  #unsubscribe: (() => void) | undefined
  #refreshTimer: Timer | undefined
  readonly #o: ResolvedClientOptions

  constructor (service: string, options: ResolvedClientOptions) {
    this.service = service
    this.#o = options
  }

  get consumerId (): string { return this.#o.consumerId }

  /** The options' clock: ramps are on it. */
  now (): number { return this.#o.clock.now() }

  /** A timer on the options' clock (unref'd); returns its cancel function. */
  schedule (fn: () => void, ms: number): () => void {
    const timer = this.#o.clock.setTimeout(fn, ms)
    timer.unref?.()
    return () => this.#o.clock.clearTimeout(timer)
  }

  /** A non-empty list has been seen: until then resolvers report nothing and calls wait (as for a first DNS answer). */
  get hasList (): boolean { return this.#seenList }

  /** Adds a resolver's listener; the first one subscribes to discovery. Returns the release function. */
  acquire (onChange: () => void): () => void {
    this.#listeners.add(onChange)
    if (this.#listeners.size === 1) this.#start()
    return () => {
      this.#listeners.delete(onChange)
      if (this.#listeners.size === 0) this.#stop()
    }
  }

  /** The instances to route to: those not leaving; all of them when every one is leaving (drainingFallback). */
  routable (): ViewEntry[] {
    const all = [...this.#entries.values()]
    const staying = all.filter((e) => !e.leaving)
    return staying.length > 0 || !this.#o.drainingFallback ? staying : all
  }

  entry (key: string): ViewEntry | undefined { return this.#entries.get(key) }

  all (): ViewEntry[] { return [...this.#entries.values()] }

  /** Configured weight x warmup factor at `now`. */
  weightOf (e: ViewEntry, now: number): number {
    if (!(e.weight > 0)) return 0
    const windowMs = this.windowOf(e)
    const elapsed = now - e.rampStartedAt
    if (windowMs <= 0 || elapsed >= windowMs) return e.weight
    if (this.#o.curve === 'linear') return Math.min(e.weight, linearWarmupWeight(elapsed, windowMs, e.weight))
    return slowStartWeight(elapsed, windowMs, e.weight, this.#o.slowStart)
  }

  windowOf (e: ViewEntry): number {
    return this.#o.curve === 'slow-start' && this.#o.slowStart.windowMs !== undefined ? this.#o.slowStart.windowMs : e.warmupMs
  }

  /** ms until the next weight recompute while some routable instance warms, else undefined. */
  tickMs (now: number): number | undefined {
    let shortest = Number.POSITIVE_INFINITY
    for (const e of this.#entries.values()) if (e.weight > 0 && now - e.rampStartedAt < this.windowOf(e)) shortest = Math.min(shortest, this.windowOf(e))
    if (shortest === Number.POSITIVE_INFINITY) return undefined
    return this.#o.warmupTickMs ?? Math.min(1_000, Math.max(20, shortest / 50))
  }

  /** A call's trailers carried x-lameduck-state: leaving states drop the instance from the list, 'serving' takes it back. */
  observeState (key: string, state: string, leaving: boolean): void {
    const e = this.#entries.get(key)
    if (e === undefined) return
    if (leaving && !e.leaving) {
      e.leaving = true
      this.#o.logger.info({ service: this.service, instance: truncateText(e.id, 200), state: truncateText(state, 40) }, 'lameduck grpc: instance is leaving; no longer picked')
      this.#notify()
    } else if (!leaving && state === 'serving' && e.leaving) {
      e.leaving = false
      this.#o.logger.info({ service: this.service, instance: truncateText(e.id, 200) }, 'lameduck grpc: instance is serving again')
      this.#notify()
    }
  }

  /** Re-reads discovery (the refresh timer's work); a failing discovery keeps the last list. */
  refresh (): void {
    let list: Instance[]
    try {
      list = this.#o.discovery.instances(this.service)
    } catch (err) {
      this.#o.logger.warn({ err, service: this.service }, 'lameduck grpc: discovery.instances failed; keeping the last list')
      return
    }
    this.apply(list)
  }

  /** Diffs a discovery list in. Same address + registeredAt = same registration (its leaving mark stays). */
  apply (list: readonly Instance[]): void {
    const now = this.#o.clock.now()
    const firstList = !this.#seenList
    const next = new Map<string, ViewEntry>()
    let changed = false
    for (const instance of Array.isArray(list) ? list : []) {
      if (instance === null || typeof instance !== 'object' || instance.status !== 'UP') continue
      const address = addressOf(instance)
      if (address === null || next.has(address.key)) continue
      const parsed = parseWarmupMetadata(instance.metadata)
      const weight = parsed.weight > 0 ? Math.min(WEIGHT_RANGE.max, Math.max(WEIGHT_RANGE.min, parsed.weight)) : 0
      const previous = this.#entries.get(address.key)
      if (previous !== undefined && previous.registeredAt === parsed.registeredAt) {
        if (previous.weight !== weight || previous.warmupMs !== parsed.warmupMs) changed = true
        previous.weight = weight
        previous.warmupMs = parsed.warmupMs
        next.set(address.key, previous)
        continue
      }
      const windowMs = this.#o.curve === 'slow-start' && this.#o.slowStart.windowMs !== undefined ? this.#o.slowStart.windowMs : parsed.warmupMs
      next.set(address.key, { ...address, id: String(instance.id), registeredAt: parsed.registeredAt, weight, warmupMs: parsed.warmupMs, rampStartedAt: rampStart(now, firstList, parsed.registeredAt, windowMs), leaving: false })
      changed = true
    }
    for (const key of this.#entries.keys()) if (!next.has(key)) changed = true
    if (next.size === 0 && this.#entries.size > 0 && this.#o.emptyListProtection) {
      if (!this.#protecting) this.#o.logger.warn({ service: this.service, kept: this.#entries.size }, `lameduck grpc: discovery lists no instance of '${this.service}'; keeping the last ${this.#entries.size} until it lists some again (emptyListProtection)`)
      this.#protecting = true
      return
    }
    this.#protecting = false
    this.#entries = next
    if (next.size > 0) this.#seenList = true
    if (changed) this.#notify()
  }

  /** Resolvers hear of changes once per turn of the event loop, never inside a call's completion. */
  #notify (): void {
    if (this.#notifyScheduled) return
    this.#notifyScheduled = true
    setImmediate(() => {
      this.#notifyScheduled = false
      for (const listener of [...this.#listeners]) listener()
    })
  }

  #start (): void {
    try {
      this.#unsubscribe = this.#o.discovery.subscribe(this.service, (list) => this.apply(list))
    } catch (err) {
      this.#o.logger.warn({ err, service: this.service }, 'lameduck grpc: discovery.subscribe failed; relying on refreshIntervalMs')
    }
    this.refresh()
    this.#scheduleRefresh()
  }

  #scheduleRefresh (): void {
    if (this.#o.refreshIntervalMs <= 0) return
    this.#refreshTimer = this.#o.clock.setTimeout(() => { this.refresh(); this.#scheduleRefresh() }, this.#o.refreshIntervalMs)
    this.#refreshTimer.unref?.()
  }

  #stop (): void {
    this.#unsubscribe?.()
    this.#unsubscribe = undefined
    if (this.#refreshTimer !== undefined) this.#o.clock.clearTimeout(this.#refreshTimer)
    this.#refreshTimer = undefined
  }

  close (): void {
    this.#listeners.clear()
    this.#stop()
  }
}
