import { test } from 'node:test'
import assert from 'node:assert/strict'
import { warmupMetadata, parseWarmupMetadata } from '@lameduck/core'

test('warmup metadata carries lameduck and Dubbo keys with the same values', () => {
  const md = warmupMetadata({ registeredAt: 1_700_000_000_123, warmupMs: 120_000, weight: 100 })
  assert.deepEqual(md, {
    'lameduck.registeredAt': '1700000000123',
    'lameduck.warmup': '120000',
    'lameduck.weight': '100',
    timestamp: '1700000000123',
    warmup: '120000',
    weight: '100'
  })
  assert.deepEqual(parseWarmupMetadata(md), { registeredAt: 1_700_000_000_123, warmupMs: 120_000, weight: 100, problems: [] })
})

test('bad metadata falls back to safe defaults and says why', () => {
  const p = parseWarmupMetadata({ 'lameduck.warmup': 'abc', 'lameduck.weight': '-5', 'lameduck.registeredAt': '12x' })
  assert.equal(p.warmupMs, 0)
  assert.equal(p.weight, 100)
  assert.equal(p.registeredAt, undefined)
  assert.equal(p.problems.length, 3)
  assert.match(p.problems.join('\n'), /lameduck\.warmup="abc" is not a non-negative duration/)
  assert.match(p.problems.join('\n'), /lameduck\.weight="-5" is not a non-negative weight/)
  // Dubbo keys are read when lameduck's are absent.
  assert.deepEqual(parseWarmupMetadata({ timestamp: '5', warmup: '600000', weight: '50' }), { registeredAt: 5, warmupMs: 600_000, weight: 50, problems: [] })
  assert.deepEqual(parseWarmupMetadata(undefined), { registeredAt: undefined, warmupMs: 0, weight: 100, problems: [] })
})
