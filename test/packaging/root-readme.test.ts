// The root README's configuration table: option names a user can paste (never a deprecated
// alias, which warns at startup), and the preset windows as core computes them.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { propagationWindow, WINDOW_PRESETS, type WindowPreset } from '@lameduck/core'
import { ROOT } from '../../scripts/pack.ts'

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
const table = readme.slice(readme.indexOf('## Configuration (plugin)'), readme.indexOf('## Development'))

test('the README\'s options table names no deprecated option', () => {
  const source = readFileSync(join(ROOT, 'packages', 'node', 'src', 'options.ts'), 'utf8')
  const deprecated = [...source.matchAll(/\/\*\* @deprecated[^*]*\*\/\n\s+(\w+)\?:/g)].map((m) => m[1]!)
  assert.ok(deprecated.length > 0, 'the deprecated aliases in packages/node/src/options.ts')
  const named = [...table.matchAll(/^\| ([^|]+) \|/gm)].flatMap((m) => [...m[1]!.matchAll(/`(\w+)`/g)].map((n) => n[1]!))
  assert.ok(named.includes('service') && named.includes('windows'), named.join(', '))
  for (const name of deprecated) assert.ok(!named.includes(name), `the table names the deprecated '${name}'`)
})

test('the README\'s preset windows are core\'s', () => {
  const row = /^\| `windows` \|.*$/m.exec(table)![0]
  const stated = [...row.matchAll(/`([\w-]+)` ([\d.]+) s/g)]
  assert.ok(stated.length >= 5, row)
  for (const [, preset, seconds] of stated) {
    assert.ok(Object.hasOwn(WINDOW_PRESETS, preset!), `${preset} is a preset`)
    assert.equal(Number(seconds) * 1_000, propagationWindow(preset as WindowPreset).totalMs, `${preset}`)
  }
})
