// The window the README states is the one the provider computes at the default SCALE: the
// offline call's wait and every offline report in its transcripts.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { propagationWindow } from '@lameduck/core'
import { eurekaWindows } from '@lameduck/eureka'
import { DEFAULT_SCALE, readSettings } from '../src/settings.ts'

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

test('examples/eureka README: the window it states is what provider.ts computes', () => {
  const s = readSettings({})
  // As provider.ts passes them.
  const windowMs = propagationWindow(eurekaWindows({ responseCacheUpdateIntervalMs: s.responseCacheUpdateIntervalMs, registryFetchIntervalMs: s.registryFetchIntervalMs, balancer: s.balancerRefreshMs, marginMs: s.marginMs })).totalMs
  assert.match(readme, new RegExp(`blocks for the ${windowMs / 1_000} s window`))
  const stated = [...readme.matchAll(/window (\d+) ms \(eureka-ribbon × SCALE ([\d.]+)\)|offline after \d+ ms: window (\d+) ms|"windowMs":(\d+)/g)]
  assert.ok(stated.length >= 3, 'the transcripts name the window')
  for (const m of stated) {
    if (m[2] !== undefined) assert.equal(Number(m[2]), DEFAULT_SCALE)
    assert.equal(Number(m[1] ?? m[3] ?? m[4]), windowMs, m[0])
  }
})
