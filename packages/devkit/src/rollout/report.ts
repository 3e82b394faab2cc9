// Turns the raw request records and pod lifecycles into the rollout report.
import { linearWarmupWeight } from '@lameduck/core'
import type { Outcome, RequestRecord } from './load.ts'
import type { Pod, TerminationResult } from './pod.ts'

export interface InstanceReport {
  id: string
  version: string
  /** ms since the load started, or null. */
  createdAt: number
  readyAt: number | null
  deletedAt: number | null
  exitedAt: number | null
  exitCode: number | null
  killed: boolean
  requests: number
  share: number
}

export interface OfflineReport {
  id: string
  /** The window the instance computed (lameduck mode), or null. */
  windowMs: number | null
  preStopMs: number | null
  /** Deletion → process exit. */
  offlineMs: number
  /** Deletion → the last request this instance served. */
  lastRequestAfterMs: number | null
  /** Calls the consumer started between this instance's deletion and its exit (to any instance): the load the drain ran under. */
  callsWhileLeaving: number
  /** The plugin's own offline report, when it ran one. */
  drain: Record<string, unknown> | null
  killed: boolean
}

export interface Bucket { t: number, perInstance: Record<string, number>, failed: number }

/** Event-loop delay (ms) measured in the run: how late timers fired on this machine. */
export interface LagReport { p99Ms: number, maxMs: number }

export interface RolloutReport {
  scenario: Record<string, unknown>
  /** The consumer's and the providers' (worst 500 ms sample of any) event-loop lag. */
  eventLoopLag: { consumer: LagReport, providers: LagReport }
  total: number
  failed: number
  failures: Record<Exclude<Outcome, 'ok'>, number>
  durationMs: number
  rolloutMs: number
  instances: InstanceReport[]
  offline: OfflineReport[]
  timeline: { bucketMs: number, buckets: Bucket[], markers: Array<{ t: number, label: string }> }
  warmup: { curve: string, windowMs: number, meanAbsoluteError: number, points: Array<{ t: number, expected: number, observed: number }> } | null
  failureSamples: RequestRecord[]
}

export interface ReportInput {
  scenario: Record<string, unknown>
  records: RequestRecord[]
  pods: Pod[]
  terminations: TerminationResult[]
  loadStartedAt: number
  rolloutStartedAt: number
  rolloutEndedAt: number
  bucketMs?: number
  /** The warmup the providers published (ms, as scaled); 0 = no ramp to measure. */
  warmupMs?: number
  consumerLag?: LagReport
}

export function buildReport (input: ReportInput): RolloutReport {
  const { records } = input
  const { failures, perInstance, lastSeen } = tally(records)
  const total = records.length
  const failed = total - records.filter((r) => r.outcome === 'ok').length
  const { buckets, bucketMs, end } = timeline(records, input.bucketMs ?? 250)
  const lags = input.pods.flatMap((p) => p.events.filter((e) => e.event === 'lag'))
  const providers = { p99Ms: Math.max(0, ...lags.map((e) => Number(e.p99Ms))), maxMs: Math.max(0, ...lags.map((e) => Number(e.maxMs))) }
  return {
    scenario: input.scenario,
    eventLoopLag: { consumer: input.consumerLag ?? { p99Ms: 0, maxMs: 0 }, providers },
    total,
    failed,
    failures,
    durationMs: end,
    rolloutMs: input.rolloutEndedAt - input.rolloutStartedAt,
    instances: instanceReports(input, perInstance, total),
    offline: offlineReports(input, lastSeen),
    timeline: { bucketMs, buckets, markers: markers(input) },
    warmup: input.warmupMs ? measureRamp(buckets, bucketMs, input.warmupMs) : null,
    failureSamples: records.filter((r) => r.outcome !== 'ok').slice(0, 20)
  }
}

/** Failures by kind; requests and the last one seen, per instance. */
function tally (records: RequestRecord[]): { failures: RolloutReport['failures'], perInstance: Map<string, number>, lastSeen: Map<string, number> } {
  const failures = { refused: 0, noInstance: 0, reset: 0, status5xx: 0, timeout: 0, other: 0 }
  const perInstance = new Map<string, number>()
  const lastSeen = new Map<string, number>()
  for (const r of records) {
    if (r.outcome !== 'ok') { failures[r.outcome]++; continue }
    if (r.instance === null) continue
    perInstance.set(r.instance, (perInstance.get(r.instance) ?? 0) + 1)
    lastSeen.set(r.instance, Math.max(lastSeen.get(r.instance) ?? 0, r.t))
  }
  return { failures, perInstance, lastSeen }
}

function instanceReports (input: ReportInput, perInstance: Map<string, number>, total: number): InstanceReport[] {
  const t0 = input.loadStartedAt
  const rel = (at: number | null): number | null => at === null ? null : at - t0
  const byId = new Map(input.terminations.map((t) => [t.id, t]))
  return input.pods.map((p) => {
    const term = byId.get(p.id)
    const requests = perInstance.get(p.id) ?? 0
    return {
      id: p.id,
      version: p.version,
      createdAt: p.createdAt - t0,
      readyAt: rel(p.readyAt),
      deletedAt: rel(term?.deletedAt ?? null),
      exitedAt: rel(term?.exitedAt ?? null),
      exitCode: term?.exitCode ?? null,
      killed: term?.killed ?? false,
      requests,
      share: total === 0 ? 0 : requests / total
    }
  })
}

function offlineReports (input: ReportInput, lastSeen: Map<string, number>): OfflineReport[] {
  return input.terminations.map((term) => {
    const pod = input.pods.find((p) => p.id === term.id)
    const drainEvent = pod?.events.find((e) => e.event === 'offline')
    const drain = (drainEvent?.report ?? null) as Record<string, unknown> | null
    const last = lastSeen.get(term.id)
    const from = term.deletedAt - input.loadStartedAt
    const to = term.exitedAt - input.loadStartedAt
    return {
      id: term.id,
      windowMs: drain === null ? null : Number(drain.windowMs),
      preStopMs: term.preStopMs,
      offlineMs: term.exitedAt - term.deletedAt,
      lastRequestAfterMs: last === undefined ? null : last + input.loadStartedAt - term.deletedAt,
      callsWhileLeaving: input.records.filter((r) => r.t >= from && r.t <= to).length,
      drain,
      killed: term.killed
    }
  })
}

/** Requests per instance and failures, in buckets of `bucketMs` from the load's start. */
function timeline (records: RequestRecord[], bucketMs: number): { buckets: Bucket[], bucketMs: number, end: number } {
  const end = records.reduce((m, r) => Math.max(m, r.t), 0)
  const buckets: Bucket[] = []
  for (let t = 0; t <= end; t += bucketMs) buckets.push({ t, perInstance: {}, failed: 0 })
  for (const r of records) {
    const b = buckets[Math.floor(r.t / bucketMs)]
    if (b === undefined) continue
    if (r.outcome !== 'ok') b.failed++
    else if (r.instance !== null) b.perInstance[r.instance] = (b.perInstance[r.instance] ?? 0) + 1
  }
  return { buckets, bucketMs, end }
}

/** When each pod got ready and each was deleted, in time order. */
function markers (input: ReportInput): Array<{ t: number, label: string }> {
  const t0 = input.loadStartedAt
  const out: Array<{ t: number, label: string }> = []
  for (const p of input.pods) if (p.readyAt !== null) out.push({ t: p.readyAt - t0, label: `${p.id} ready` })
  for (const term of input.terminations) out.push({ t: term.deletedAt - t0, label: `${term.id} deleted` })
  return out.sort((a, b) => a.t - b.t)
}

/**
 * Observed vs expected share of each instance while some instance ramps. The
 * consumer's clock starts an instance's ramp when it first sees it, which is
 * when it first sends it a request; an instance's expected share is its
 * linear-warmup weight over the sum of the weights of the instances serving in
 * that bucket. Buckets are compared only while at least one instance ramps and
 * none is leaving (a leaving instance's share is cut on purpose).
 */
function measureRamp (buckets: Bucket[], bucketMs: number, warmupMs: number): RolloutReport['warmup'] {
  const firstSeen = new Map<string, number>()
  const lastSeen = new Map<string, number>()
  for (const b of buckets) {
    for (const id of Object.keys(b.perInstance)) {
      if (!firstSeen.has(id)) firstSeen.set(id, b.t)
      lastSeen.set(id, b.t)
    }
  }
  const start = buckets[0]?.t ?? 0
  const points: Array<{ t: number, expected: number, observed: number }> = []
  let errorSum = 0
  for (const b of buckets) {
    const ids = Object.keys(b.perInstance)
    const total = ids.reduce((sum, id) => sum + b.perInstance[id]!, 0)
    if (total < 10) continue
    const mid = b.t + bucketMs / 2
    // Skip buckets where an instance is leaving (its last bucket is within 2 of this one) or none ramps.
    const leaving = ids.some((id) => lastSeen.get(id)! - b.t < 2 * bucketMs && lastSeen.get(id)! < (buckets.at(-1)?.t ?? 0))
    const weights = ids.map((id) => {
      const first = firstSeen.get(id)!
      // Instances present from the start are warm.
      return first === start ? 100 : linearWarmupWeight(mid - first, warmupMs, 100)
    })
    if (leaving || weights.every((w) => w === 100)) continue
    const sum = weights.reduce((a, w) => a + w, 0)
    ids.forEach((id, i) => {
      if (firstSeen.get(id) === start) return
      const expected = weights[i]! / sum
      const observed = b.perInstance[id]! / total
      errorSum += Math.abs(expected - observed)
      points.push({ t: b.t, expected: Number(expected.toFixed(4)), observed: Number(observed.toFixed(4)) })
    })
  }
  return { curve: 'linear', windowMs: warmupMs, meanAbsoluteError: points.length === 0 ? 0 : Number((errorSum / points.length).toFixed(4)), points }
}
