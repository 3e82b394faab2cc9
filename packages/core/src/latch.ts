/**
 * A gate that opens once: `wait()` resolves when it opens (at once if it is
 * open), or rejects with the signal's reason when aborted first. Discoveries
 * use it for "ready after the first successful list/fetch".
 */
export class Latch {
  #open = false
  #waiters: Array<() => void> = []

  get isOpen (): boolean { return this.#open }

  /** Opens the gate (once; later calls do nothing) and releases every waiter. */
  open (): void {
    if (this.#open) return
    this.#open = true
    for (const w of this.#waiters.splice(0)) w()
  }

  wait (signal?: AbortSignal): Promise<void> {
    if (this.#open) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const done = (): void => { signal?.removeEventListener('abort', abort); resolve() }
      const abort = (): void => { this.#waiters = this.#waiters.filter((w) => w !== done); reject(signal!.reason) }
      if (signal?.aborted) { abort(); return }
      signal?.addEventListener('abort', abort, { once: true })
      this.#waiters.push(done)
    })
  }
}
