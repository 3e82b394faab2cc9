// Counts requests in flight and lets the drain wait for zero.
export class InFlightTracker {
  #count = 0
  #total = 0
  #waiters: Array<() => void> = []

  /** Requests currently in flight. */
  get count (): number { return this.#count }
  /** Requests started since creation. */
  get total (): number { return this.#total }

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
    if (this.#count === 0) return Promise.resolve()
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
