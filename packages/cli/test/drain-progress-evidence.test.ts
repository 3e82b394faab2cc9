// prestop and wait-drained print what an observed window waits for (issue 26): while the evidence's
// term is pending the countdown is only the budget's bound, so the line says what it waits for.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { DrainProgress } from '@lameduck/core'
import { describeStatus } from '../src/drain-progress.ts'

const drain = (windowTerms: DrainProgress['windowTerms']): Partial<DrainProgress> => ({ phase: 'window', startedAt: 0, windowEndsAt: 20_000, windowTerms, requestsWhileDraining: 3 })

test('a pending observed term: the line names it and the bound', () => {
  const terms: DrainProgress['windowTerms'] = [
    { term: 'registry', by: 'none', endsAt: 0, detail: 'nothing registered: from the start + 0 s' },
    { term: 'endpointLagMs', by: 'pending', endsAt: null, detail: "kubernetes endpoint: pod 'orders-1' is still ready in its EndpointSlice" }
  ]
  const line = describeStatus({ state: 'draining', inflight: 0, window: { totalMs: 15_000 }, drain: drain(terms) }, 5_000)
  assert.match(line, /window waits for kubernetes endpoint: pod 'orders-1' is still ready in its EndpointSlice \(at most 15 s more\)/)
})

test('control: observed (or no evidence), the countdown as before', () => {
  const observed = describeStatus({ state: 'draining', window: { totalMs: 15_000 }, drain: drain([{ term: 'endpointLagMs', by: 'observed', endsAt: 20_000, detail: 'x' }]) }, 5_000)
  assert.match(observed, /window 15 s left of 15 s/)
  assert.match(describeStatus({ state: 'draining', window: { totalMs: 15_000 }, drain: drain([]) }, 5_000), /window 15 s left of 15 s/)
})
