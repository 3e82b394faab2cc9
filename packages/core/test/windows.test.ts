import { test } from 'node:test'
import assert from 'node:assert/strict'
import { propagationWindow, InvalidOptionError, WINDOW_PRESETS } from '@lameduck/core'

test('presets add up to the documented windows', () => {
  const cases: Array<[Parameters<typeof propagationWindow>[0], number, number]> = [
    ['eureka-ribbon', 90_000, 3], // 30 s read-only cache + 30 s client fetch + 30 s Ribbon
    ['eureka-spring', 95_000, 3], // ... + Spring Cloud LoadBalancer's 35 s TTL
    ['eureka-node', 60_000, 2], // eureka-js-client consumer: no Ribbon hop
    ['nacos', 11_500, 3], // 0.5 s push + 10 s poll fallback + 1 s first-subscribe margin
    ['kubernetes', 15_000, 1],
    ['none', 0, 0]
  ]
  for (const [preset, total, parts] of cases) {
    const w = propagationWindow(preset)
    assert.equal(w.totalMs, total, String(preset))
    assert.equal(w.breakdown.length, parts, String(preset))
    assert.equal(w.breakdown.reduce((s, b) => s + b.ms, 0), total)
  }
  const ribbon = propagationWindow('eureka-ribbon')
  assert.deepEqual(ribbon.breakdown.map((b) => [b.part, b.ms]), [['serverCacheMs', 30_000], ['clientFetchMs', 30_000], ['balancerRefreshMs', 30_000]])
  assert.equal(ribbon.preset, 'eureka-ribbon')
})

test('custom parts, preset overrides and scaling', () => {
  assert.equal(propagationWindow({ serverCacheMs: 1000, clientFetchMs: 2000 }).totalMs, 3000)
  const overridden = propagationWindow({ preset: 'eureka-ribbon', balancerRefreshMs: 5_000 })
  assert.equal(overridden.totalMs, 65_000)
  assert.equal(overridden.preset, 'custom')
  assert.equal(propagationWindow({ preset: 'eureka-ribbon' }).preset, 'eureka-ribbon')
  const scaled = propagationWindow({ preset: 'eureka-spring', scale: 0.01 })
  assert.equal(scaled.totalMs, 950)
  assert.deepEqual(scaled.breakdown.map((b) => b.ms), [300, 300, 350])
})

test('bad window input names the option and the fix', () => {
  const bad: Array<[unknown, RegExp]> = [
    ['eureka', /windows: unknown preset 'eureka'; use one of eureka-ribbon/],
    [{ serverCacheMs: -1 }, /windows\.serverCacheMs: must be a non-negative number of milliseconds, got number -1/],
    [{ clientFetchMs: '30s' }, /windows\.clientFetchMs: .*got '30s'/],
    [{ clientFetchMs: 2 ** 31 }, /windows\.clientFetchMs: 2147483648 ms is longer than a timer can wait/],
    [{ serverCache: 1 }, /windows\.serverCache: unknown option \(did you mean .serverCacheMs.\?\)/],
    [{ scale: 0 }, /windows\.scale: must be a positive/],
    [{ preset: 'nope' }, /windows\.preset: unknown preset/],
    [42, /windows: expected a preset name or an object/]
  ]
  for (const [input, message] of bad) {
    assert.throws(() => propagationWindow(input as never), (err: unknown) => {
      assert.ok(err instanceof InvalidOptionError)
      assert.equal((err as InvalidOptionError).code, 'LAMEDUCK_ERR_INVALID_OPTION')
      assert.match((err as Error).message, message)
      return true
    })
  }
})

test('replicationMs: a part of its own in the total and the breakdown, 0 in every preset', () => {
  const w = propagationWindow({ preset: 'eureka-node', replicationMs: 500 })
  assert.equal(w.totalMs, 60_500)
  assert.deepEqual(w.breakdown.map((b) => b.part), ['serverCacheMs', 'replicationMs', 'clientFetchMs'])
  assert.equal(w.breakdown[1]!.why, 'registry replication between servers')
  for (const preset of Object.values(WINDOW_PRESETS)) assert.equal(preset.replicationMs, 0)
})
