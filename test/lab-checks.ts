// What a rollout-lab test checks before it believes a count of lost calls: that the load ran, and
// (for drains that take time) that calls were being made through every drain. Both are independent
// of machine speed: a starved load generator makes fewer calls, not none — a floor on the total
// (e.g. "≥ 800") failed on a loaded CI machine with 776 while the run itself was sound.
import assert from 'node:assert/strict'
import type { RolloutReport } from '@lameduck/devkit'

/** The consumer made calls: enough that a loss would show (at ≥ 100 req/s for seconds, a floor far below any sound run). */
export function assertLoadRan (r: RolloutReport): void {
  assert.ok(r.total > 100, `the consumer made ${r.total} calls`)
}

/** The load ran and every deleted pod drained under it: calls were started between its deletion and its exit. */
export function assertDrainedUnderLoad (r: RolloutReport): void {
  assertLoadRan(r)
  for (const o of r.offline) assert.ok(o.callsWhileLeaving > 0, `${o.id}: calls were made while it was leaving (${o.callsWhileLeaving}, ${o.offlineMs} ms from deletion to exit)`)
}

/**
 * What an assertion on a lab's loss prints: the first failures (where each went and whether it had a
 * socket), how they spread in time, the event-loop lag on both sides, and the rollout's markers.
 * The hog runner keeps only failure messages, so this is all a rare failure leaves behind.
 */
export function lossDetail (r: RolloutReport): string {
  const f = r.failureSamples
  const spread = f.length === 0 ? null : { first: f[0]!.t, last: f.at(-1)!.t, byOutcome: r.failures }
  return JSON.stringify({ samples: f.slice(0, 3), spread, lag: r.eventLoopLag, markers: r.timeline.markers, drains: drainSummaries(r) })
}

/** Each deleted pod's drain in brief: how long it took and what its report says was left in flight. */
export function drainSummaries (r: RolloutReport): Array<Record<string, unknown>> {
  return r.offline.map((o) => {
    const d = o.drain ?? {}
    return { id: o.id, offlineMs: o.offlineMs, killed: o.killed, outcome: d.outcome, sidecarMs: d.sidecarMs, inflightWaitMs: d.inflightWaitMs, inflightAtEnd: d.inflightAtEnd, requestsWhileDraining: d.requestsWhileDraining, problems: d.problems }
  })
}
