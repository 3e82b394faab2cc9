// Eureka's two-level response cache (ResponseCacheImpl). Registry changes
// invalidate only the read-write level; GETs are served from the read-only
// level, which a timer refreshes from read-write every
// responseCacheUpdateIntervalMs (first at a wall-clock multiple, then with a fixed delay). That
// timer is the first hop of the propagation window: after a DELETE, clients keep
// getting the old payload until the next tick.
import { gzipSync } from 'node:zlib'
import type { Clock, Timer } from '@lameduck/core'

/** One cached payload. `body === null` is Eureka's EMPTY_PAYLOAD (the app is unknown → 404). */
export class CacheValue {
  readonly body: string | null
  readonly createdAt: number
  #gzip: Buffer | undefined

  constructor (body: string | null, createdAt: number) {
    this.body = body
    this.createdAt = createdAt
  }

  get gzipped (): Buffer | undefined {
    if (this.body === null) return undefined
    this.#gzip ??= gzipSync(this.body)
    return this.#gzip
  }
}

export interface ResponseCacheOptions {
  clock: Clock
  useReadOnlyCache: boolean
  updateIntervalMs: number
  /** readWriteCacheMap expireAfterWrite (responseCacheAutoExpirationInSeconds, as ms). */
  autoExpirationMs: number
  /** Builds the payload for a key from the registry (a read-write miss). */
  generate: (key: string) => string | null
}

export class ResponseCache {
  readonly #o: ResponseCacheOptions
  readonly #readWrite = new Map<string, CacheValue>()
  readonly #readOnly = new Map<string, CacheValue>()
  #timer: Timer | undefined
  #closed = false
  #refreshes = 0

  constructor (options: ResponseCacheOptions) {
    this.#o = options
    if (options.useReadOnlyCache) this.#schedule()
  }

  #schedule (): void {
    if (this.#closed) return
    const interval = this.#o.updateIntervalMs
    const now = this.#o.clock.now()
    // Like the java.util.Timer in ResponseCacheImpl: the first tick at the next multiple of the
    // interval, then a fixed delay — each tick `interval` after the previous one actually ran, so a
    // late tick pushes every later one, as on the real server (timer.schedule(task, firstTime, period)).
    const first = (Math.floor(now / interval) + 1) * interval
    const tick = (): void => {
      if (this.#closed) return
      // Rescheduled from when the timer thread took the task, before running it (TimerThread.mainLoop).
      this.#timer = this.#o.clock.setTimeout(tick, interval)
      this.#timer.unref?.()
      this.refresh()
    }
    this.#timer = this.#o.clock.setTimeout(tick, first - now)
    this.#timer.unref?.()
  }

  /** Copies every read-only key from the read-write level (the cache-fill timer task). */
  refresh (): void {
    this.#refreshes++
    for (const key of this.#readOnly.keys()) this.#readOnly.set(key, this.#readWriteGet(key))
  }

  get refreshes (): number { return this.#refreshes }

  #readWriteGet (key: string): CacheValue {
    const now = this.#o.clock.now()
    const cached = this.#readWrite.get(key)
    if (cached !== undefined && now - cached.createdAt < this.#o.autoExpirationMs) return cached
    const value = new CacheValue(this.#o.generate(key), now)
    this.#readWrite.set(key, value)
    return value
  }

  get (key: string): CacheValue {
    if (!this.#o.useReadOnlyCache) return this.#readWriteGet(key)
    let value = this.#readOnly.get(key)
    if (value === undefined) {
      value = this.#readWriteGet(key)
      this.#readOnly.set(key, value)
    }
    return value
  }

  /** Drops read-write entries; the read-only level keeps serving until the next refresh. */
  invalidate (keys: Iterable<string>): void {
    for (const key of keys) this.#readWrite.delete(key)
  }

  close (): void {
    this.#closed = true
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#readOnly.clear()
    this.#readWrite.clear()
  }
}
