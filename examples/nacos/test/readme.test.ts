// The windows the README states are the ones the example computes: its table, the window the
// offline call blocks for, and the Spring variant, each from nacosWindows() and readSettings().
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { propagationWindow } from '@lameduck/core'
import { nacosWindows } from '@lameduck/nacos'
import { DEFAULT_SCALE, readSettings } from '../src/settings.ts'

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const seconds = (ms: number): string => `${Number((ms / 1_000).toFixed(2))} s`
/** The window provider.ts computes at this SCALE (MARGIN_MS unset). */
const windowAt = (scale: number): number => {
  const s = readSettings({ SCALE: String(scale) })
  return propagationWindow(nacosWindows({ pushDelayMs: s.pushDelayMs, cacheMillis: s.cacheMillis, marginMs: s.marginMs })).totalMs
}

test('examples/nacos README: the window table, the offline call and the Spring variant say what the code computes', () => {
  const row = /\| \*\*window \(`nacosWindows\(\)`\)\*\* \| \*\*([\d.]+ s)\*\* \| \*\*([\d.]+ s)\*\* \|/.exec(readme)
  assert.ok(row, 'the table\'s window row')
  assert.equal(row[1], seconds(windowAt(1)), 'production (SCALE=1)')
  assert.equal(row[2], seconds(windowAt(DEFAULT_SCALE)), `here (SCALE=${DEFAULT_SCALE})`)
  assert.match(readme, new RegExp(`here \\(×${DEFAULT_SCALE}\\)`))
  assert.match(readme, new RegExp(`blocks for the ${seconds(windowAt(DEFAULT_SCALE))} window`))
  assert.match(readme, new RegExp(`At\\s+\`SCALE=1\` that is ${seconds(windowAt(1))}; the \`nacos\` preset says ${seconds(propagationWindow('nacos').totalMs)}`))
  assert.match(readme, new RegExp(`nacosWindows\\(\\{ balancerRefreshMs: 30_000 \\}\\)\` gives ${seconds(propagationWindow(nacosWindows({ balancerRefreshMs: 30_000 })).totalMs)}`))
  // The transcripts are of a run at the default SCALE: each offline report names its window.
  for (const [, ms] of readme.matchAll(/offline after \d+ ms: window (\d+) ms/g)) assert.equal(Number(ms), windowAt(DEFAULT_SCALE), 'a transcript of the default run')
})
