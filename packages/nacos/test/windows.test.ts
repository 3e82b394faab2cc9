import { test } from 'node:test'
import assert from 'node:assert/strict'
import { InvalidOptionError, propagationWindow, WINDOW_PRESETS } from '@lameduck/core'
import { nacosWindows } from '@lameduck/nacos'

test('nacosWindows() defaults equal core\'s nacos preset', () => {
  assert.deepEqual(nacosWindows(), WINDOW_PRESETS.nacos)
  assert.equal(propagationWindow(nacosWindows()).totalMs, propagationWindow('nacos').totalMs)
  assert.equal(propagationWindow('nacos').totalMs, 11_500)
})

test('nacosWindows() takes the push delay and poll period of your servers, and other hops on top', () => {
  assert.deepEqual(nacosWindows({ pushDelayMs: 1_000, cacheMillis: 3_000, marginMs: 500 }), { serverCacheMs: 1_000, clientFetchMs: 3_000, balancerRefreshMs: 0, endpointLagMs: 0, marginMs: 500 })
  // Pushes known not to arrive: only polling counts.
  assert.equal(nacosWindows({ push: false }).serverCacheMs, 0)
  // A Spring consumer with Ribbon on top of its Nacos client.
  const w = propagationWindow(nacosWindows({ balancerRefreshMs: 30_000 }))
  assert.equal(w.totalMs, 41_500)
  assert.deepEqual(w.breakdown.map((b) => b.part), ['serverCacheMs', 'clientFetchMs', 'balancerRefreshMs', 'marginMs'])
  // Parts can be scaled for tests like any windows input.
  assert.equal(propagationWindow({ ...nacosWindows(), scale: 0.1 }).totalMs, 1_150)
})

test('nacosWindows() validates its input', () => {
  assert.throws(() => nacosWindows({ cacheMillis: -1 }), (err: unknown) => err instanceof InvalidOptionError && err.option === 'nacosWindows.cacheMillis')
  assert.throws(() => nacosWindows({ pushDelayMs: Number.NaN }), (err: unknown) => err instanceof InvalidOptionError && err.option === 'nacosWindows.pushDelayMs')
  assert.throws(() => nacosWindows({ push: 'no' as unknown as boolean }), (err: unknown) => err instanceof InvalidOptionError && err.option === 'nacosWindows.push')
})
