// Envoy's drain manager (drain_manager_impl.cc) as the admin API drives it: a drain
// sequence per direction with a deadline of --drain-time-s, completion callbacks when it
// elapses, and the per-response `drainClose` decision the HTTP connection manager asks.

export type DrainDirection = 'inbound' | 'all'
export type TrafficDirection = 'inbound' | 'outbound' | 'unspecified'
export type DrainStrategy = 'immediate' | 'gradual'

interface Sequence { startedAt: number, timer: NodeJS.Timeout | null }

export interface DrainManagerOptions {
  drainTimeMs: number
  strategy: DrainStrategy
  /** Envoy >= #37873: an inbound-only drain leaves other directions alone. Before it, graceful drains hit every listener. */
  perDirectionDrain: boolean
  random: () => number
  now: () => number
}

export class DrainManager {
  readonly options: DrainManagerOptions
  #sequences = new Map<DrainDirection, Sequence>()
  #onStart: Array<(direction: DrainDirection, startedAt: number) => void> = []

  constructor (options: DrainManagerOptions) {
    this.options = options
  }

  /** Whether a sequence covering `direction` runs (an all-direction drain covers inbound). */
  draining (direction: DrainDirection): boolean {
    return this.#sequences.has(direction) || this.#sequences.has('all')
  }

  /** Starts a sequence; `onComplete` runs after the drain time. Idempotent per direction. */
  start (direction: DrainDirection, onComplete: () => void): void {
    if (this.#sequences.has(direction)) return
    const startedAt = this.options.now()
    const seq: Sequence = { startedAt, timer: null }
    seq.timer = setTimeout(() => { seq.timer = null; onComplete() }, this.options.drainTimeMs)
    seq.timer.unref()
    this.#sequences.set(direction, seq)
    for (const fn of this.#onStart) fn(direction, startedAt)
  }

  onStart (fn: (direction: DrainDirection, startedAt: number) => void): void {
    this.#onStart.push(fn)
  }

  /** When the drain that applies to a listener began, or null when none does. */
  startedFor (listener: TrafficDirection): number | null {
    const all = this.#sequences.get('all')?.startedAt
    const inbound = this.#sequences.get('inbound')?.startedAt
    const applies = inbound !== undefined && (listener === 'inbound' || !this.options.perDirectionDrain)
    const candidates = [all, applies ? inbound : undefined].filter((t): t is number => t !== undefined)
    return candidates.length === 0 ? null : Math.min(...candidates)
  }

  /**
   * The HCM's question before encoding a response: close this connection?
   * Health-check failed on a DEFAULT listener: always. Immediate: as soon as a drain
   * applies. Gradual, as Envoy 1.40.0 does it (measured, test/real/envoy-gradual.test.ts):
   * whole elapsed seconds against half the drain time — none in the first second, then
   * P = ⌊elapsed s⌋ / (drain time / 2), every response from half the drain time on.
   */
  drainClose (listener: TrafficDirection, healthCheckFailed: boolean, modifyOnly: boolean): boolean {
    if (healthCheckFailed && !modifyOnly) return true
    const startedAt = this.startedFor(listener)
    if (startedAt === null) return false
    if (this.options.strategy === 'immediate') return true
    const elapsedMs = this.options.now() - startedAt
    const halfS = this.options.drainTimeMs / 2000
    if (halfS <= 0 || elapsedMs >= this.options.drainTimeMs) return true
    return this.options.random() * halfS < Math.floor(elapsedMs / 1000)
  }

  close (): void {
    for (const seq of this.#sequences.values()) if (seq.timer !== null) clearTimeout(seq.timer)
  }
}
