import { systemClock, type Clock, type Timer } from './clock.ts'
import { count } from './validate.ts'
import type { InFlightTracker } from './inflight.ts'
import type { EarlyOfflineMonitor } from './lifecycle-options.ts'

export interface ConsumerTrackerOptions {
  /** The propagation window: how far back "seen recently" reaches. */
  windowMs: number
  /** Nothing may have arrived for this long before the window may end early. */
  quietMs: number
  inflight: InFlightTracker
  clock?: Clock
  /**
   * Bound on remembered consumer ids. Default 10 000. A new id that finds the tracker
   * full of ids seen within the window is not remembered, and the window runs in full.
   */
  maxConsumers?: number
}

/** What describe() reports, for /status. */
export interface ConsumerTrackerReport {
  consumersInWindow: number
  consumersTold: number
  /** Why the window may not end early yet; null when it may. */
  pending: string | null
  maxConsumers: number
  /**
   * More consumer ids arrived within the window than the tracker holds: one of them
   * may never have been told, so the full window runs. ms since the last such id, else null.
   */
  overflowedMsAgo: number | null
}

interface Seen { lastSeen: number, toldAt: number }

// What a balancer sends (1-200 visible ASCII); anything else counts as a request without an id.
const MAX_ID_LENGTH = 200
const VISIBLE_ASCII = /^[\x21-\x7e]+$/
/** Oldest ids a new id may look at for a stale one to replace, when the tracker is full. */
const EVICT_STEPS = 8

/**
 * Decides when draining may end before the full window (earlyOffline): every
 * consumer id seen in the last window has been told "draining", no anonymous
 * request arrived in the last window, nothing arrived for `quietMs`, nothing in flight.
 *
 * Ids come from a header any client can set, so the tracker must not be talked into
 * an early end: an id seen within the window is never dropped to make room. When the
 * tracker is full, a new id looks at a few of the oldest ids (a bounded number, so
 * each call costs O(1)) for one older than the window to replace; when none is, the
 * new id counts as an overflow, which keeps the full window like an anonymous request.
 */
export class ConsumerTracker implements EarlyOfflineMonitor {
  readonly #o: Required<Omit<ConsumerTrackerOptions, 'clock'>>
  readonly #clock: Clock
  readonly #consumers = new Map<string, Seen>()
  /** The same ids as #consumers from #head on, oldest first; ids still in the window rotate to the back. */
  #order: string[] = []
  #head = 0
  #lastAnonymous = Number.NEGATIVE_INFINITY
  #lastOverflow = Number.NEGATIVE_INFINITY
  #lastRequest = Number.NEGATIVE_INFINITY
  #drainStart = Number.POSITIVE_INFINITY
  #listeners = new Set<() => void>()
  #timer: Timer | null = null

  constructor (options: ConsumerTrackerOptions) {
    const maxConsumers = count('maxConsumers', options.maxConsumers, 10_000, { min: 1 })
    this.#o = { ...options, maxConsumers }
    this.#clock = options.clock ?? systemClock
  }

  /**
   * Records a request; `consumer` is the x-lameduck-consumer header, if any. `now`
   * is the request's stamp when the caller took one already (an HTTP server stamps
   * every request); a stamp never earlier than the arrival errs towards the full window.
   */
  seen (consumer: string | undefined, now = this.#clock.now()): void {
    this.#lastRequest = now
    if (typeof consumer !== 'string') { this.#lastAnonymous = now; return }
    const consumers = this.#consumers
    // Only valid ids are remembered, so a known id needs no check: the usual case, without the regex.
    const entry = consumers.get(consumer)
    if (entry !== undefined) { entry.lastSeen = now; return }
    if (consumer.length > MAX_ID_LENGTH || !VISIBLE_ASCII.test(consumer)) { this.#lastAnonymous = now; return }
    if (consumers.size >= this.#o.maxConsumers && !this.#evictStale(now)) { this.#lastOverflow = now; return }
    consumers.set(consumer, { lastSeen: now, toldAt: Number.NEGATIVE_INFINITY })
    this.#order.push(consumer)
  }

  /** Records that `consumer` received a response marked draining (`now` as in seen()). */
  told (consumer: string | undefined, now = this.#clock.now()): void {
    if (consumer === undefined || consumer === '') return
    const entry = this.#consumers.get(consumer)
    if (entry !== undefined) entry.toldAt = now
  }

  begin (now: number): void {
    this.#drainStart = now
  }

  pending (now: number): string | null {
    const since = now - this.#o.windowMs
    if (this.#lastAnonymous >= since) return `a request without x-lameduck-consumer arrived ${Math.max(0, now - this.#lastAnonymous)} ms ago: keeping the full window`
    if (this.#lastOverflow >= since) return `more than ${this.#o.maxConsumers} consumer ids within the window (the last not tracked ${Math.max(0, now - this.#lastOverflow)} ms ago): keeping the full window`
    for (const [id, c] of this.#consumers) {
      if (c.lastSeen >= since && c.toldAt < this.#drainStart) return `consumer ${id} has not received a draining response yet`
    }
    if (now - this.#lastRequest < this.#o.quietMs) return `quiet period: last request ${Math.max(0, now - this.#lastRequest)} ms ago (need ${this.#o.quietMs} ms)`
    if (this.#o.inflight.count > 0) return `${this.#o.inflight.count} request(s) in flight`
    return null
  }

  onChange (fn: () => void): () => void {
    this.#listeners.add(fn)
    this.#schedule()
    return () => {
      this.#listeners.delete(fn)
      if (this.#listeners.size === 0 && this.#timer !== null) { this.#clock.clearTimeout(this.#timer); this.#timer = null }
    }
  }

  // The quiet period passes without any event, so re-check on a short tick while someone listens.
  #schedule (): void {
    if (this.#timer !== null) return
    const tick = Math.max(10, Math.min(250, Math.floor(this.#o.quietMs / 4)))
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = null
      if (this.#listeners.size === 0) return
      for (const fn of this.#listeners) fn()
      this.#schedule()
    }, tick)
    this.#timer.unref?.()
  }

  /**
   * Frees one slot: looks at up to EVICT_STEPS of the oldest ids for one not seen
   * within the window. Ids that were seen again go to the back of the line. Bounded
   * work per call; a miss only means the full window (never a shorter one).
   */
  #evictStale (now: number): boolean {
    const since = now - this.#o.windowMs
    const order = this.#order
    let freed = false
    for (let step = 0; step < EVICT_STEPS && this.#head < order.length; step++) {
      const id = order[this.#head++]!
      if (this.#consumers.get(id)!.lastSeen < since) { this.#consumers.delete(id); freed = true; break }
      order.push(id)
    }
    // Drop the consumed front now and then: O(1) amortized, and the array stays within 2x the map.
    if (this.#head > 1_024 && this.#head * 2 > order.length) { this.#order = order.slice(this.#head); this.#head = 0 }
    return freed
  }

  /** Progress for /status. */
  describe (now = this.#clock.now()): ConsumerTrackerReport {
    const since = now - this.#o.windowMs
    let recent = 0
    let told = 0
    for (const c of this.#consumers.values()) {
      if (c.lastSeen < since) continue
      recent++
      if (c.toldAt >= this.#drainStart) told++
    }
    const overflowedMsAgo = this.#lastOverflow >= since ? Math.max(0, now - this.#lastOverflow) : null
    return { consumersInWindow: recent, consumersTold: told, pending: this.pending(now), maxConsumers: this.#o.maxConsumers, overflowedMsAgo }
  }
}
