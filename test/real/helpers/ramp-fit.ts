// How closely a consumer's share of requests followed a weight ramp. A consumer sees a
// published weight some time after it was published (0 up to the propagation window:
// server cache + client fetch + balancer cache, each at a random phase), so at time t
// its share lies between what the weight published at t − window and at t would give.
// Per bucket: the measured share, that envelope, and how far outside it the share fell;
// and the single lag that fits best, with the error left at that lag.
import type { WeightRampSchedule } from '@lameduck/core'

export interface Call { t: number, instance: string | null, status: number }

/** The weight published `ms` after registration (0 before it: not registered yet). */
export function publishedAt (schedule: WeightRampSchedule, ms: number): number {
  if (ms < 0) return 0
  let w = 0
  for (const step of schedule.steps) if (step.atMs <= ms) w = step.weight
  return w
}

export interface Bucket {
  /** ms after registration */
  from: number
  requests: number
  /** measured share of the newcomer, 0..1 */
  share: number
  /** expected share with the consumer lagging `lagMaxMs` (lo) and not at all (hi) */
  lo: number
  hi: number
  /** how far outside [lo, hi] the measured share is, 0..1 */
  outside: number
}

export interface Fit {
  buckets: Bucket[]
  /** largest excursion outside the envelope, 0..1 */
  maxOutside: number
  /** the single lag that fits best, and the RMS and largest error of the share at that lag, 0..1 */
  bestLagMs: number
  rmsAtBestLag: number
  maxAtBestLag: number
}

/** Mean over [from, from + len) of `f`, sampled every `stepMs`. */
function mean (f: (t: number) => number, from: number, len: number, stepMs = 25): number {
  let sum = 0
  let n = 0
  for (let t = from; t < from + len; t += stepMs) { sum += f(t); n++ }
  return n === 0 ? 0 : sum / n
}

/**
 * `expected(t)` is the share a consumer gives when it sees what was true at `t` (ms after
 * registration); calls are bucketed from `startAt` (epoch ms of the registration) over
 * `durationMs`.
 */
export function fitShares (o: { calls: Call[], instance: string, startAt: number, durationMs: number, bucketMs: number, lagMaxMs: number, expected: (t: number) => number }): Fit {
  const buckets: Bucket[] = []
  for (let from = 0; from + o.bucketMs <= o.durationMs; from += o.bucketMs) {
    const inBucket = o.calls.filter((c) => c.status === 200 && c.t - o.startAt >= from && c.t - o.startAt < from + o.bucketMs)
    const share = inBucket.length === 0 ? 0 : inBucket.filter((c) => c.instance === o.instance).length / inBucket.length
    const lo = mean((t) => o.expected(t - o.lagMaxMs), from, o.bucketMs)
    const hi = mean((t) => o.expected(t), from, o.bucketMs)
    buckets.push({ from, requests: inBucket.length, share, lo, hi, outside: Math.max(0, lo - share, share - hi) })
  }
  let best = { lag: 0, rms: Number.POSITIVE_INFINITY, max: 0 }
  for (let lag = 0; lag <= o.lagMaxMs; lag += 100) {
    const errors = buckets.map((b) => b.share - mean((t) => o.expected(t - lag), b.from, o.bucketMs))
    const rms = Math.sqrt(errors.reduce((s, e) => s + e * e, 0) / Math.max(1, errors.length))
    if (rms < best.rms) best = { lag, rms, max: Math.max(...errors.map(Math.abs)) }
  }
  return { buckets, maxOutside: Math.max(0, ...buckets.map((b) => b.outside)), bestLagMs: best.lag, rmsAtBestLag: best.rms, maxAtBestLag: best.max }
}

export const pct = (x: number): string => `${(100 * x).toFixed(1)}`
