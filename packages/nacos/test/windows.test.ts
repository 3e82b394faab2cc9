import { test } from 'node:test'
import assert from 'node:assert/strict'
import { InvalidOptionError, propagationWindow, WINDOW_PRESETS } from '@lameduck/core'
import { nacosWindows } from '@lameduck/nacos'

test('nacosWindows() defaults: core\'s nacos preset plus the push task\'s 100 ms check', () => {
  assert.deepEqual(nacosWindows(), { ...WINDOW_PRESETS.nacos, serverCacheMs: 600 })
  assert.equal(propagationWindow(nacosWindows()).totalMs, 11_600)
  assert.equal(propagationWindow('nacos').totalMs, 11_500)
})

test('nacosWindows(): the list snapshot stays with push off; a cluster adds the distro sync delay', () => {
  assert.equal(nacosWindows({ push: false }).serverCacheMs, 600, 'the v1 list is the push task\'s snapshot either way')
  assert.equal(nacosWindows({ cluster: true }).replicationMs, 1_000)
  assert.equal(nacosWindows({ cluster: 2, distroSyncDelayMs: 1_500 }).replicationMs, 1_500)
  assert.equal(nacosWindows({ cluster: 1 }).replicationMs, 0, 'one node: nothing to sync')
  assert.equal(propagationWindow(nacosWindows({ cluster: true })).totalMs, 12_600)
  assert.throws(() => nacosWindows({ cluster: 0 }), (err: unknown) => err instanceof InvalidOptionError && err.option === 'nacosWindows.cluster')
})

test('nacosWindows() takes the push delay and poll period of your servers, and other hops on top', () => {
  assert.deepEqual(nacosWindows({ pushDelayMs: 1_000, cacheMillis: 3_000, marginMs: 500 }), { serverCacheMs: 1_100, replicationMs: 0, clientFetchMs: 3_000, balancerRefreshMs: 0, endpointLagMs: 0, marginMs: 500 })
  // A Spring consumer with Ribbon on top of its Nacos client.
  const w = propagationWindow(nacosWindows({ balancerRefreshMs: 30_000 }))
  assert.equal(w.totalMs, 41_600)
  assert.deepEqual(w.breakdown.map((b) => b.part), ['serverCacheMs', 'clientFetchMs', 'balancerRefreshMs', 'marginMs'])
  // Parts can be scaled for tests like any windows input.
  assert.equal(propagationWindow({ ...nacosWindows(), scale: 0.1 }).totalMs, 1_160)
})

test('nacosWindows() validates its input', () => {
  assert.throws(() => nacosWindows({ cacheMillis: -1 }), (err: unknown) => err instanceof InvalidOptionError && err.option === 'nacosWindows.cacheMillis')
  assert.throws(() => nacosWindows({ pushDelayMs: Number.NaN }), (err: unknown) => err instanceof InvalidOptionError && err.option === 'nacosWindows.pushDelayMs')
  assert.throws(() => nacosWindows({ push: 'no' as unknown as boolean }), (err: unknown) => err instanceof InvalidOptionError && err.option === 'nacosWindows.push')
})
