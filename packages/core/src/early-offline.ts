import { systemClock, type Clock, type Timer } from './clock.ts'
import type { InFlightTracker } from './inflight.ts'
import type { EarlyOfflineMonitor } from './lifecycle-options.ts'

export interface ConsumerTrackerOptions {
  /** The propagation window: how far back "seen recently" reaches. */
  windowMs: number
  /** Nothing may have arrived for this long before the window may end early. */
  quietMs: number
  inflight: InFlightTracker
  clock?: Clock
  /** Bound on remembered consumer ids. Default 10 000. */
  maxConsumers?: number
}

interface Seen { lastSeen: number, toldAt: number }

/**
 * Decides when draining may end before the full window (earlyOffline): every
 * consumer id seen in the last window has been told "draining", no anonymous
 * request arrived in the last window, nothing arrived for `quietMs`, nothing in flight.
 */
export class ConsumerTracker implements EarlyOfflineMonitor {
  readonly #o: Required<Omit<ConsumerTrackerOptions, 'clock'>>
  readonly #clock: Clock
  readonly #consumers = new Map<string, Seen>()
  #lastAnonymous = Number.NEGATIVE_INFINITY
  #lastRequest = Number.NEGATIVE_INFINITY
  #drainStart = Number.POSITIVE_INFINITY
  #listeners = new Set<() => void>()
  #timer: Timer | null = null

  constructor (options: ConsumerTrackerOptions) {
    this.#o = { maxConsumers: 10_000, ...options }
    this.#clock = options.clock ?? systemClock
  }

  /** Records a request; `consumer` is the x-lameduck-consumer header, if any. */
  seen (consumer: string | undefined): void {
    const now = this.#clock.now()
    this.#lastRequest = now
    if (consumer === undefined || consumer === '') { this.#lastAnonymous = now; return }
    const entry = this.#consumers.get(consumer)
    if (entry !== undefined) { entry.lastSeen = now; return }
    if (this.#consumers.size >= this.#o.maxConsumers) this.#prune(now)
    this.#consumers.set(consumer, { lastSeen: now, toldAt: Number.NEGATIVE_INFINITY })
  }

  /** Records that `consumer` received a response marked draining. */
  told (consumer: string | undefined): void {
    if (consumer === undefined || consumer === '') return
    const entry = this.#consumers.get(consumer)
    if (entry !== undefined) entry.toldAt = this.#clock.now()
  }

  begin (now: number): void {
    this.#drainStart = now
  }

  pending (now: number): string | null {
    const since = now - this.#o.windowMs
    if (this.#lastAnonymous >= since) return `a request without x-lameduck-consumer arrived ${now - this.#lastAnonymous} ms ago: keeping the full window`
    for (const [id, c] of this.#consumers) {
      if (c.lastSeen >= since && c.toldAt < this.#drainStart) return `consumer ${id} has not received a draining response yet`
    }
    if (now - this.#lastRequest < this.#o.quietMs) return `quiet period: last request ${now - this.#lastRequest} ms ago (need ${this.#o.quietMs} ms)`
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

  #prune (now: number): void {
    const since = now - this.#o.windowMs
    for (const [id, c] of this.#consumers) if (c.lastSeen < since) this.#consumers.delete(id)
    if (this.#consumers.size >= this.#o.maxConsumers) {
      const oldest = this.#consumers.keys().next().value
      if (oldest !== undefined) this.#consumers.delete(oldest)
    }
  }

  /** Progress for /status. */
  describe (now = this.#clock.now()): Record<string, unknown> {
    const since = now - this.#o.windowMs
    let recent = 0
    let told = 0
    for (const c of this.#consumers.values()) {
      if (c.lastSeen < since) continue
      recent++
      if (c.toldAt >= this.#drainStart) told++
    }
    return { consumersInWindow: recent, consumersTold: told, pending: this.pending(now) }
  }
}
