// truncateText: the one bound for outside text that is kept or shown.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { truncateText } from '../src/index.ts'

test('text within the bound is returned as is; longer text is cut with its length, never inside a surrogate pair', () => {
  assert.equal(truncateText('short'), 'short')
  assert.equal(truncateText('x'.repeat(200)), 'x'.repeat(200))
  assert.equal(truncateText('x'.repeat(201)), `${'x'.repeat(200)}… (201 characters)`)
  assert.equal(truncateText('abcdef', 3), 'abc… (6 characters)')
  // '😀' is two UTF-16 units: a cut between them would leave a lone surrogate.
  assert.equal(truncateText(`ab${'😀'.repeat(3)}`, 3), 'ab… (8 characters)')
  assert.equal(truncateText(`ab${'😀'.repeat(3)}`, 4), 'ab😀… (8 characters)')
})

test('the kept part is a copy: cutting huge strings does not keep them alive', () => {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const heap = (): number => { gc(); gc(); return process.memoryUsage().heapUsed }
  const before = heap()
  // 50 distinct 2 MB strings (as 50 registrations' metadata would be); a V8 slice of each would keep all 100 MB.
  const kept = Array.from({ length: 50 }, (_, i) => truncateText(JSON.stringify(`${i}${'x'.repeat(2_000_000)}`)))
  const grown = heap() - before
  assert.equal(kept.length, 50)
  assert.ok(grown < 20 * 2 ** 20, `the heap grew by ${(grown / 2 ** 20).toFixed(1)} MB`)
})
