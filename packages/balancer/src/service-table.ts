import { isLeaving, serviceKey } from '@lameduck/core'
import type { Instance, Timer } from '@lameduck/core'
import type { Dispatcher } from 'undici'
import { EdfScheduler } from './edf-scheduler.ts'
import { NoInstanceError } from './errors.ts'
import type { InstanceCounts } from './errors.ts'
import { bareHost, hostPort, hostProblem } from './address.ts'
import { InstanceEntry } from './instance-entry.ts'
import { readWarmupMetadata, shownText } from './instance-metadata.ts'
import type { ResolvedOptions } from './options.ts'

/** Response header values that mean "leaving: pick me no more" (the plugin's draining states). */

export interface InstanceStats {
  /** The instance id (cut to 500 characters with its length when longer). */
  id: string
  address: string
  /** Configured weight (metadata). */
  weight: number
  /** Weight used for picking right now: configured x warmup factor. */
  effectiveWeight: number
  warming: boolean
  /** Ramp progress on the consumer's clock; null when the instance counted as warm from the start. */
  warmupElapsedMs: number | null
  warmupMs: number
  draining: boolean
  ejected: boolean
  ejectedForMs: number
  picks: number
  connectFailures: number
  /** Problems found in the instance's warmup metadata (each replaced by a safe default or clamped), each cut after 500 characters. */
  problems: string[]
}

export interface ServiceStats {
  service: string
  /** Instances picks currently go to. */
  available: number
  /** True while every instance is draining and picks go to them anyway (drainingFallback). */
  drainingFallback: boolean
  instances: InstanceStats[]
}

/** Why an instance's host or port cannot be routed to, or null. */
function addressProblem (instance: Instance): string | null {
  const port = instance.port
  if (!Number.isInteger(port) || port < 1 || port > 65_535) return `port ${shownText(port)} is not 1..65535`
  return hostProblem(instance.host)
}

/** One service: its instances, their weights, and the scheduler picks come from. */
export class ServiceTable {
  readonly service: string
  readonly key: string
  #entries = new Map<string, InstanceEntry>()
  #scheduler = new EdfScheduler<InstanceEntry>()
  #usingFallback = false
  #seenInstances = false
  #refreshFailing = false
  /** Instances skipped in the last list (id + address), so each is logged once, not per refresh. */
  #skipped = new Set<string>()
  #protecting = false
  #tickTimer: Timer | undefined
  #ejectTimer: Timer | undefined
  #unsubscribe: (() => void) | undefined
  #closed = false
  readonly #options: ResolvedOptions
  readonly #retire: (pool: Dispatcher) => void

  /** `retire` closes a pool gracefully (in-flight requests finish) and tracks it until closed. */
  constructor (service: string, options: ResolvedOptions, retire: (pool: Dispatcher) => void) {
    this.service = service
    this.key = serviceKey(service)
    this.#options = options
    this.#retire = retire
  }

  /** Reads the first list and subscribes to changes. */
  start (): void {
    this.refresh()
    try {
      this.#unsubscribe = this.#options.discovery.subscribe(this.service, (list) => this.apply(list))
    } catch (err) {
      this.#options.logger.warn({ err, service: this.service }, 'balancer: discovery.subscribe failed; relying on refreshIntervalMs')
    }
  }

  /** Re-reads discovery (the refresh timer's work). A failing discovery keeps the last list. */
  refresh (): void {
    let list: Instance[]
    try {
      list = this.#options.discovery.instances(this.service)
    } catch (err) {
      if (!this.#refreshFailing) this.#options.logger.warn({ err, service: this.service }, 'balancer: discovery.instances failed; keeping the last list')
      this.#refreshFailing = true
      return
    }
    this.#refreshFailing = false
    this.apply(list)
  }

  /** Diffs a discovery list into the table. Same id + address + registeredAt = same registration. */
  apply (list: readonly Instance[]): void {
    if (this.#closed) return
    const now = this.#options.clock.now()
    const firstSnapshot = !this.#seenInstances
    const next = new Map<string, InstanceEntry>()
    let changed = false
    const skipped = new Set<string>()
    for (const instance of Array.isArray(list) ? list : []) {
      if (instance === null || typeof instance !== 'object' || instance.status !== 'UP') continue
      // A custom Discovery or a registry may hand over anything: only routable addresses enter the table.
      const problem = addressProblem(instance)
      if (problem !== null) { this.#skip(instance, problem, skipped); continue }
      const address = hostPort(bareHost(instance.host), instance.port)
      const key = typeof instance.id === 'string' && instance.id !== '' ? instance.id : address
      if (next.has(key)) continue
      const parsed = readWarmupMetadata(instance.metadata)
      const previous = this.#entries.get(key)
      if (previous !== undefined && previous.hostPort === address && previous.registeredAt === parsed.registeredAt) {
        if (previous.update(instance, parsed)) changed = true
        this.#warnOnce(previous)
        next.set(key, previous)
        continue
      }
      const entry = new InstanceEntry(key, address, instance, parsed, firstSnapshot, now, this.#options)
      if (previous !== undefined) {
        if (previous.hostPort === address) previous.handOverPools(entry)
        else this.#closePools(previous)
        this.#options.logger.info({ service: this.service, instance: entry.shownId }, 'balancer: instance registered again; ramping it anew')
      }
      this.#warnOnce(entry)
      next.set(key, entry)
      changed = true
    }
    for (const [key, entry] of this.#entries) {
      if (next.has(key)) continue
      // Gone from discovery: in-flight requests finish on the old pool, then it closes.
      this.#closePools(entry)
      changed = true
    }
    this.#skipped = skipped
    if (next.size === 0 && this.#entries.size > 0 && this.#options.emptyListProtection) {
      // Keep what we had (draining ones still serve; dead ones fail over to ejection).
      if (!this.#protecting) this.#options.logger.warn({ service: this.service, kept: this.#entries.size }, `balancer: discovery lists no instance of '${this.service}'; keeping the last ${this.#entries.size} until it lists some again (emptyListProtection)`)
      this.#protecting = true
      return
    }
    if (this.#protecting && next.size > 0) this.#options.logger.info({ service: this.service, instances: next.size }, `balancer: discovery lists '${this.service}' again`)
    this.#protecting = false
    this.#entries = next
    if (next.size > 0) this.#seenInstances = true
    if (changed) this.rebuild()
  }

  /** Recomputes weights and the pick rotation. Runs on changes and on warmup ticks, never per pick. */
  rebuild (): void {
    if (this.#closed) return
    const now = this.#options.clock.now()
    const serving: InstanceEntry[] = []
    const servingWeights: number[] = []
    const draining: InstanceEntry[] = []
    const drainingWeights: number[] = []
    let shortestRamp = Number.POSITIVE_INFINITY
    let nextReturn = Number.POSITIVE_INFINITY
    for (const entry of this.#entries.values()) {
      const weight = entry.computeWeight(now)
      entry.effectiveWeight = weight
      if (entry.isWarming(now)) shortestRamp = Math.min(shortestRamp, entry.windowMs)
      if (entry.isEjected(now)) { nextReturn = Math.min(nextReturn, entry.ejectedUntil); continue }
      if (!(weight > 0)) continue
      if (entry.draining) { draining.push(entry); drainingWeights.push(weight) } else { serving.push(entry); servingWeights.push(weight) }
    }
    this.#usingFallback = serving.length === 0 && draining.length > 0 && this.#options.drainingFallback
    if (this.#usingFallback) this.#scheduler.reset(draining, drainingWeights)
    else this.#scheduler.reset(serving, servingWeights)

    const clock = this.#options.clock
    if (shortestRamp !== Number.POSITIVE_INFINITY && this.#tickTimer === undefined) {
      // Default: ~50 steps over the shortest ramp, between 20 ms and 1 s apart.
      const tick = this.#options.warmupTickMs ?? Math.min(1_000, Math.max(20, shortestRamp / 50))
      this.#tickTimer = clock.setTimeout(() => { this.#tickTimer = undefined; this.rebuild() }, tick)
      this.#tickTimer.unref?.()
    }
    if (this.#ejectTimer !== undefined) { clock.clearTimeout(this.#ejectTimer); this.#ejectTimer = undefined }
    if (nextReturn !== Number.POSITIVE_INFINITY) {
      this.#ejectTimer = clock.setTimeout(() => { this.#ejectTimer = undefined; this.rebuild() }, Math.max(1, nextReturn - now))
      this.#ejectTimer.unref?.()
    }
  }

  /** The next instance, or undefined when none can take a request. No allocation. */
  pick (): InstanceEntry | undefined {
    const entry = this.#scheduler.pick()
    if (entry !== undefined) entry.picks++
    return entry
  }

  /** A pick that avoids instances this request already failed on. */
  pickExcept (tried: readonly InstanceEntry[]): InstanceEntry | undefined {
    const entry = this.#scheduler.pickExcept((e) => tried.includes(e))
    if (entry !== undefined) entry.picks++
    return entry
  }

  /** Leave-aware: a response's x-lameduck-state. */
  observeState (entry: InstanceEntry, value: string | string[]): void {
    const state = (Array.isArray(value) ? value[value.length - 1] ?? '' : value).trim().toLowerCase()
    if (isLeaving(state)) {
      if (entry.draining || this.#entries.get(entry.key) !== entry) return
      entry.draining = true
      this.#options.logger.info({ service: this.service, instance: entry.shownId, state: shownText(state) }, 'balancer: instance is leaving; no longer picked')
      // Its idle keep-alive sockets would only hold the provider's drain up.
      this.#closePools(entry)
      this.rebuild()
    } else if (state === 'serving' && entry.draining) {
      entry.draining = false
      this.#options.logger.info({ service: this.service, instance: entry.shownId }, 'balancer: instance is serving again')
      this.rebuild()
    }
  }

  /** A connect to `entry` failed; ejects it after `ejectAfter` in a row. */
  connectFailed (entry: InstanceEntry, err: unknown): void {
    const now = this.#options.clock.now()
    if (!entry.connectFailed(now)) return
    this.#options.logger.warn({ service: this.service, instance: entry.shownId, err, ejectedForMs: entry.ejectedUntil - now }, 'balancer: connect failed; instance ejected')
    if (this.#entries.get(entry.key) === entry) this.rebuild()
  }

  counts (): InstanceCounts {
    const now = this.#options.clock.now()
    const counts = { registered: this.#entries.size, draining: 0, ejected: 0, zeroWeight: 0 }
    for (const e of this.#entries.values()) {
      if (e.isEjected(now)) counts.ejected++
      else if (!(e.weight > 0)) counts.zeroWeight++
      else if (e.draining) counts.draining++
    }
    return counts
  }

  /** The typed error for "nothing to pick", saying why. `cause` is the last connect error, if any. */
  noInstance (cause?: unknown, tried = 0): NoInstanceError {
    const c = this.counts()
    const opts = cause === undefined ? undefined : { cause }
    const n = c.registered
    if (n === 0) return new NoInstanceError(this.service, 'none-registered', c, 'discovery lists no instance that is UP', opts)
    if (c.ejected === n) {
      const back = Math.max(0, Math.min(...[...this.#entries.values()].map((e) => e.ejectedUntil)) - this.#options.clock.now())
      return new NoInstanceError(this.service, 'all-ejected', c, `all ${n} instances are ejected after connect failures (the first returns in ${back} ms)`, opts)
    }
    if (tried > 0) {
      const code = (cause as { code?: string } | undefined)?.code ?? String(cause)
      return new NoInstanceError(this.service, 'connect-failed', c, `connects failed on every instance tried (${tried}; last error: ${code})`, opts)
    }
    if (c.draining === n) return new NoInstanceError(this.service, 'all-draining', c, `all ${n} instances are draining (drainingFallback is off)`, opts)
    if (c.zeroWeight === n) return new NoInstanceError(this.service, 'no-weight', c, `all ${n} instances have weight 0`, opts)
    return new NoInstanceError(this.service, 'unavailable', c, `of ${n} instances, ${c.draining} are draining, ${c.ejected} ejected, ${c.zeroWeight} have weight 0`, opts)
  }

  stats (): ServiceStats {
    const now = this.#options.clock.now()
    const instances: InstanceStats[] = []
    for (const e of this.#entries.values()) {
      instances.push({
        id: e.shownId,
        address: e.hostPort,
        weight: e.weight,
        effectiveWeight: e.effectiveWeight,
        warming: e.isWarming(now),
        warmupElapsedMs: e.rampStartedAt === Number.NEGATIVE_INFINITY ? null : now - e.rampStartedAt,
        warmupMs: e.windowMs,
        draining: e.draining,
        ejected: e.isEjected(now),
        ejectedForMs: Math.max(0, e.ejectedUntil - now),
        picks: e.picks,
        connectFailures: e.connectFailures,
        problems: e.problems
      })
    }
    return { service: this.service, available: this.#scheduler.size, drainingFallback: this.#usingFallback, instances }
  }

  /** Logs a skipped instance the first time it shows up (again) in a list. */
  #skip (instance: Instance, problem: string, skipped: Set<string>): void {
    const [shownId, host, port] = [shownText(instance.id), shownText(instance.host), shownText(instance.port)]
    const id = `${shownId}\u0000${host}\u0000${port}`
    skipped.add(id)
    if (this.#skipped.has(id)) return
    this.#options.logger.warn({ service: this.service, instance: shownId, host, port, problem },
      `balancer: skipping an instance of '${this.service}' with an unusable address: ${problem}`)
  }

  #warnOnce (entry: InstanceEntry): void {
    if (entry.problems.length === 0 || entry.warned) return
    entry.warned = true
    this.#options.logger.warn({ service: this.service, instance: entry.shownId, problems: entry.problems, weight: entry.weight, warmupMs: entry.warmupMs },
      'balancer: bad warmup metadata; using safe defaults')
  }

  #closePools (entry: InstanceEntry): void {
    for (const pool of entry.takePools()) this.#retire(pool)
  }

  /** Stops timers and the subscription and retires every pool. */
  close (): void {
    this.#closed = true
    this.#unsubscribe?.()
    this.#unsubscribe = undefined
    const clock = this.#options.clock
    if (this.#tickTimer !== undefined) clock.clearTimeout(this.#tickTimer)
    if (this.#ejectTimer !== undefined) clock.clearTimeout(this.#ejectTimer)
    this.#tickTimer = this.#ejectTimer = undefined
    this.#scheduler.reset([], [])
    for (const entry of this.#entries.values()) this.#closePools(entry)
    this.#entries.clear()
  }
}
