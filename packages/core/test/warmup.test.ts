import { test } from 'node:test'
import assert from 'node:assert/strict'
import { linearWarmupWeight, slowStartWeight } from '@lameduck/core'

test('Dubbo linear warmup matches hand-computed values', () => {
  // weight 100, warmup 600 s: one weight unit per 6 s of uptime.
  assert.equal(linearWarmupWeight(60_000, 600_000, 100), 10)
  assert.equal(linearWarmupWeight(300_000, 600_000, 100), 50)
  assert.equal(linearWarmupWeight(5_999, 600_000, 100), 1) // floor of 1 before the first step
  assert.equal(linearWarmupWeight(6_000, 600_000, 100), 1)
  assert.equal(linearWarmupWeight(12_000, 600_000, 100), 2)
  assert.equal(linearWarmupWeight(599_999, 600_000, 100), 99)
  assert.equal(linearWarmupWeight(600_000, 600_000, 100), 100)
  assert.equal(linearWarmupWeight(-1_000, 600_000, 100), 1) // clock skew: provider ahead
  assert.equal(linearWarmupWeight(1_000, 0, 100), 100) // no warmup
  assert.equal(linearWarmupWeight(1_000, 600_000, 0), 0) // weight 0 means no traffic
})

test('Envoy slow start matches hand-computed values', () => {
  // aggression 1, min 10 %, t = 5 % of the window → the 10 % floor.
  assert.equal(slowStartWeight(5_000, 100_000, 100, { aggression: 1, minWeightPercent: 10 }), 10)
  assert.equal(slowStartWeight(5_000, 100_000, 100), 10) // same defaults
  assert.equal(slowStartWeight(50_000, 100_000, 100), 50)
  // aggression 0.5 squares the time factor: (0.5)^2 = 25 %.
  assert.equal(slowStartWeight(50_000, 100_000, 100, { aggression: 0.5 }), 25)
  // aggression 2 takes the square root: sqrt(0.25) = 50 %.
  assert.equal(slowStartWeight(25_000, 100_000, 100, { aggression: 2 }), 50)
  assert.equal(slowStartWeight(0, 100_000, 100, { minWeightPercent: 0 }), 100 * (1 / 100_000)) // 1 ms floor on time
  assert.equal(slowStartWeight(50_000, 100_000, 100, { aggression: -3 }), 50) // ≤ 0 treated as 1
  assert.equal(slowStartWeight(100_000, 100_000, 100), 100)
})
