// Counts requests in flight and lets the drain wait for zero.
export class InFlightTracker {
  #count = 0
  #total = 0
  #waiters: Array<() => void> = []
  #settle: (() => void) | undefined

  /** Requests currently in flight (ends that a transport counts lazily are settled first). */
  get count (): number {
    this.#settle?.()
    return this.#count
  }

  /** Requests started since creation. */
  get total (): number { return this.#total }

  /**
   * For a transport that learns of some ends lazily (it sweeps what it tracks
   * instead of listening to each request): `settle` calls end() for those, and
   * runs before every read of the count.
   */
  settleWith (settle: () => void): void { this.#settle = settle }

  start (): void {
    this.#count++
    this.#total++
  }

  end (): void {
    if (this.#count === 0) return
    this.#count--
    if (this.#count === 0 && this.#waiters.length > 0) {
      const waiters = this.#waiters
      this.#waiters = []
      for (const w of waiters) w()
    }
  }

  /** Resolves when nothing is in flight; rejects with the signal's reason if aborted first. */
  idle (signal?: AbortSignal): Promise<void> {
    if (this.count === 0) return Promise.resolve()
    return new Promise((resolve, reject) => {
      if (signal?.aborted) { reject(signal.reason); return }
      const done = (): void => { signal?.removeEventListener('abort', onAbort); resolve() }
      const onAbort = (): void => {
        const i = this.#waiters.indexOf(done)
        if (i !== -1) this.#waiters.splice(i, 1)
        reject(signal!.reason)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#waiters.push(done)
    })
  }
}
