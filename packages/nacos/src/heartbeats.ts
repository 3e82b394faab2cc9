import { systemClock, type Clock, type Logger, type Timer } from '@lameduck/core'
import type { BeatAnswer } from './sdk-bridge.ts'

// The heartbeat loop for ephemeral instances, in place of the SDK's: the first
// beat after one interval (not ~10 s after the client was created), the
// interval the server answers, and a re-registration when the server answers
// 20404 (it does not know the instance: restarted, or expired it).

export const RESOURCE_NOT_FOUND = 20404

export interface BeatTarget {
  /** Grouped service name, `GROUP@@name`. */
  groupedService: string
  /** The `beat` JSON: ip, port, cluster, weight, metadata, ephemeral. */
  beat: Record<string, unknown>
  /** Registers the instance again (after a 20404). */
  reregister: () => Promise<void>
  intervalMs: number
}

interface Entry extends BeatTarget {
  timer: Timer | null
  inflight: Promise<void> | null
  stopped: boolean
  beats: number
  failures: number
  reRegistrations: number
  lastBeatAt: number | null
  lastCode: number | null
  lastError: string | null
}

export interface HeartbeatsOptions {
  send: (groupedService: string, beat: Record<string, unknown>) => Promise<BeatAnswer>
  logger: Logger
  /** Drives the beat timers and stamps lastBeatAt. Default the system clock. */
  clock?: Clock
}

export class Heartbeats {
  readonly #entries = new Map<string, Entry>()
  readonly #o: HeartbeatsOptions
  readonly #clock: Clock

  constructor (options: HeartbeatsOptions) {
    this.#o = options
    this.#clock = options.clock ?? systemClock
  }

  /** Starts (or restarts, with new beat data) the loop for `key`. */
  async start (key: string, target: BeatTarget): Promise<void> {
    await this.stop(key)
    const entry: Entry = { ...target, timer: null, inflight: null, stopped: false, beats: 0, failures: 0, reRegistrations: 0, lastBeatAt: null, lastCode: null, lastError: null }
    this.#entries.set(key, entry)
    this.#schedule(entry)
  }

  /** Stops the loop and waits for a beat in flight, so no beat can land after a deregistration. */
  async stop (key: string): Promise<void> {
    const entry = this.#entries.get(key)
    if (entry === undefined) return
    this.#entries.delete(key)
    entry.stopped = true
    if (entry.timer !== null) this.#clock.clearTimeout(entry.timer)
    await entry.inflight
  }

  async stopAll (): Promise<void> {
    await Promise.all([...this.#entries.keys()].map((k) => this.stop(k)))
  }

  describe (key: string): Record<string, unknown> | undefined {
    const e = this.#entries.get(key)
    if (e === undefined) return undefined
    return { intervalMs: e.intervalMs, beats: e.beats, failures: e.failures, reRegistrations: e.reRegistrations, lastBeatAt: e.lastBeatAt, lastCode: e.lastCode, lastError: e.lastError }
  }

  #schedule (entry: Entry): void {
    if (entry.stopped) return
    entry.timer = this.#clock.setTimeout(() => {
      entry.timer = null
      entry.inflight = this.#beat(entry).finally(() => {
        entry.inflight = null
        this.#schedule(entry)
      })
    }, entry.intervalMs)
    entry.timer.unref?.()
  }

  async #beat (entry: Entry): Promise<void> {
    const where = `${String(entry.beat.ip)}:${String(entry.beat.port)} of ${entry.groupedService}`
    try {
      const answer = await this.#o.send(entry.groupedService, entry.beat)
      entry.beats++
      entry.lastBeatAt = this.#clock.now()
      entry.lastCode = answer.code ?? null
      entry.lastError = null
      if (answer.clientBeatInterval !== undefined) entry.intervalMs = answer.clientBeatInterval
      if (answer.code === RESOURCE_NOT_FOUND && !entry.stopped) {
        this.#o.logger.warn({ nacos: { beat: entry.beat, code: answer.code } }, `nacos: the server does not know ${where} (beat answered ${RESOURCE_NOT_FOUND}); registering it again`)
        await entry.reregister()
        entry.reRegistrations++
        this.#o.logger.info({ nacos: { beat: entry.beat } }, `nacos: registered ${where} again`)
      }
    } catch (err) {
      entry.failures++
      entry.lastError = err instanceof Error ? err.message : String(err)
      this.#o.logger.warn({ err, nacos: { beat: entry.beat } }, `nacos: beat for ${where} failed: ${entry.lastError}`)
    }
  }
}
