/**
 * The requests in flight: each with its start time (for the log that names what
 * a bound cut), what carries its response and the connection it travels on (an
 * HTTP/2 stream forgets its session once closed, and the response's end must
 * still find it), and the connection's request stamp when it was read (so the
 * drain can tell the last request read on a connection).
 *
 * A slot table, not a Map keyed by request: a Map's churn (an entry per request,
 * rehashed as deleted entries pile up) cost about 1.5 us per request in allocation
 * and GC on a hello-world server; a slot reused from a free list is a few array writes.
 *
 * A request may be ended two ways: by end(), from a listener on its carrier, or by
 * sweep(), which asks each carrier whether it is done. Sweeping is what lets a
 * transport count a request without a listener on it (a 'close' listener cost more
 * than everything else the engine does per HTTP/1 request); sweep() frees nothing
 * that has a listener, as the transport's `ended` says.
 */
/** The smallest table a sweep is due at: done requests are held for at most about this many starts. */
const SWEEP_MIN = 8
/** While requests counted without a listener are open, a sweep also runs this often (ms). */
const SWEEP_IDLE_MS = 1_000

/** How a transport that counts requests without a listener tells which are done, and hears of their end. */
export interface Sweeper<K, C> {
  /** Whether the request on `carrier` and `connection` is done; false for one a listener will end. */
  ended: (carrier: K, connection: C) => boolean
  /** A done request, freed by a sweep. */
  onEnd: (connection: C, carrier: K) => void
}

export class OpenRequests<R extends object, K extends object, C extends object> {
  readonly #requests: Array<R | undefined> = []
  readonly #carriers: Array<K | undefined> = []
  readonly #connections: Array<C | undefined> = []
  readonly #startedAt: number[] = []
  readonly #stamps: number[] = []
  readonly #free: number[] = []
  readonly #sweeper: Sweeper<K, C> | undefined
  /** The table size at which a sweep is due (when no slot is free). */
  #sweepAt = SWEEP_MIN
  /** The idle sweep: after a burst the server may go quiet, and a done request must not be held until the next one. */
  #timer: ReturnType<typeof setTimeout> | undefined
  readonly #tick = (): void => {
    this.#timer = undefined
    if (this.sweep() > 0) this.#sweepLater()
  }

  /** `sweeper`: for counted(), requests whose end no listener reports. */
  constructor (sweeper?: Sweeper<K, C>) {
    this.#sweeper = sweeper
  }

  /** Records a request; returns its slot, for end(). */
  start (request: R, carrier: K, connection: C, at: number, stamp: number): number {
    const slot = this.#free.length > 0 ? this.#free.pop()! : this.#requests.length
    this.#requests[slot] = request
    this.#carriers[slot] = carrier
    this.#connections[slot] = connection
    this.#startedAt[slot] = at
    this.#stamps[slot] = stamp
    return slot
  }

  /** Forgets the request in `slot`; returns its connection (undefined when already ended). */
  end (slot: number): C | undefined {
    const c = this.#connections[slot]
    if (c === undefined) return undefined
    this.#requests[slot] = undefined
    this.#carriers[slot] = undefined
    this.#connections[slot] = undefined
    this.#free.push(slot)
    return c
  }

  /**
   * Records a request that no listener will end: the sweeper's `ended` says when
   * it is done. Sweeps when the table is full, and lets it grow to twice what a
   * sweep leaves open, so a sweep costs O(1) per request; done requests are held
   * until then (few while few are open), or for at most SWEEP_IDLE_MS on a quiet server.
   */
  counted (request: R, carrier: K, connection: C, at: number, stamp: number): void {
    if (this.#free.length === 0 && this.#requests.length >= this.#sweepAt) this.sweep()
    this.start(request, carrier, connection, at, stamp)
    if (this.#timer === undefined) this.#sweepLater()
  }

  /** Ends every request the sweeper says is done, handing each to its onEnd; returns how many stay open. */
  sweep (): number {
    const sweeper = this.#sweeper
    if (sweeper === undefined) return 0
    let open = 0
    const carriers = this.#carriers
    const connections = this.#connections
    for (let i = 0; i < carriers.length; i++) {
      const k = carriers[i]
      if (k === undefined) continue
      const c = connections[i]!
      if (!sweeper.ended(k, c)) { open++; continue }
      this.end(i)
      sweeper.onEnd(c, k)
    }
    this.#sweepAt = Math.max(SWEEP_MIN, 2 * open)
    return open
  }

  #sweepLater (): void {
    this.#timer = setTimeout(this.#tick, SWEEP_IDLE_MS)
    // unref: never what keeps the process alive (optional: fake timers may not have it).
    this.#timer.unref?.()
  }

  /** [request, started at] for each open request, oldest first. */
  list (): Array<[R, number]> {
    const out: Array<[R, number]> = []
    for (let i = 0; i < this.#requests.length; i++) {
      const r = this.#requests[i]
      if (r !== undefined) out.push([r, this.#startedAt[i]!])
    }
    return out.sort((a, b) => a[1] - b[1])
  }

  /** Calls `fn` for each open request (in no particular order). */
  forEach (fn: (request: R, carrier: K, connection: C, stamp: number, at: number, slot: number) => void): void {
    for (let i = 0; i < this.#requests.length; i++) {
      const r = this.#requests[i]
      if (r !== undefined) fn(r, this.#carriers[i]!, this.#connections[i]!, this.#stamps[i]!, this.#startedAt[i]!, i)
    }
  }
}
