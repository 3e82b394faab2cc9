import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { nonAscii, runtimeSources, toAscii } from '../../scripts/ascii-sources.ts'

const script = fileURLToPath(new URL('../../scripts/ascii-sources.ts', import.meta.url))

const SAMPLE = [
  '// a → b, 2× faster, 1–2 s, ≥ 3',
  "export const arrow = 'from → to'",
  // eslint-disable-next-line no-template-curly-in-string -- source text holding a template literal
  'export const range = `1–${2 + 1} s`',
  'export const re = /a…b/',
  '/** RFC 9110 §11.1 */',
  'export const plain = 1'
].join('\n')

test('ascii sources: each character past ASCII is found, in a comment or in a literal', () => {
  const found = nonAscii('x.ts', SAMPLE).map((f) => `${f.line}:${f.column} ${f.char} ${f.inLiteral ? 'literal' : 'comment'}`)
  assert.deepEqual(found, [
    '1:6 → comment', '1:12 × comment', '1:23 – comment', '1:29 ≥ comment',
    '2:28 → literal', '3:24 – literal', '4:21 … literal', '5:14 § comment'
  ])
})

test('ascii sources: the fix writes comments in ASCII and keeps every literal\'s value', async () => {
  const fixed = toAscii('x.ts', SAMPLE)
  assert.equal(nonAscii('x.ts', fixed).length, 0)
  assert.match(fixed, /^\/\/ a -> b, 2x faster, 1-2 s, >= 3$/m)
  assert.match(fixed, /RFC 9110 section 11\.1/)
  const dir = mkdtempSync(join(tmpdir(), 'ascii-sources-'))
  try {
    writeFileSync(join(dir, 'before.ts'), SAMPLE)
    writeFileSync(join(dir, 'after.ts'), fixed)
    const before = await import(join(dir, 'before.ts')) as Record<string, unknown>
    const after = await import(join(dir, 'after.ts')) as Record<string, unknown>
    assert.deepEqual([after.arrow, after.range, after.plain], [before.arrow, before.range, before.plain])
    assert.deepEqual(['a…b', 'a...b'].map((s) => (after.re as RegExp).test(s)), ['a…b', 'a...b'].map((s) => (before.re as RegExp).test(s)))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('ascii sources: one character past ASCII doubles what V8 keeps of a module\'s source (what the check prevents)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ascii-heap-'))
  try {
    const comment = `// ${'x'.repeat(97)}\n`.repeat(2_000)
    writeFileSync(join(dir, 'ascii.mjs'), `${comment}export const f = 1\n`)
    writeFileSync(join(dir, 'wide.mjs'), `// →\n${comment}export const f = 1\n`)
    const kept = (file: string): number => Number(execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e',
      `gc(); gc(); const before = process.memoryUsage().heapUsed; await import(${JSON.stringify(join(dir, file))}); gc(); gc(); console.log(process.memoryUsage().heapUsed - before)`], { encoding: 'utf8' }))
    const ascii = kept('ascii.mjs')
    const wide = kept('wide.mjs')
    const source = comment.length
    // The source stays (Node keeps it for lazy compilation): ~1 byte per character, or ~2 once one is wide.
    assert.ok(ascii > 0.9 * source && ascii < 1.4 * source, `ASCII module kept ${ascii} B for ${source} characters`)
    assert.ok(wide > 1.8 * source, `a module with one '→' kept ${wide} B for ${source} characters`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('ascii sources: the check fails on a runtime package and names the fix; tool packages may keep theirs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ascii-check-'))
  try {
    for (const p of ['node', 'cli']) mkdirSync(join(dir, `packages/${p}/src`), { recursive: true })
    writeFileSync(join(dir, 'packages/cli/src/bar.ts'), "export const bar = '█░'\n")
    writeFileSync(join(dir, 'packages/node/src/a.ts'), '// a → b\nexport const a = 1\n')
    const run = (...args: string[]): ReturnType<typeof spawnSync> => spawnSync(process.execPath, [script, ...args], { cwd: dir, encoding: 'utf8' })
    const failed = run()
    assert.equal(failed.status, 1)
    assert.match(String(failed.stderr), /packages\/node\/src\/a\.ts:1:6: '→' \(U\+2192\) in a comment: write it in ASCII/)
    assert.doesNotMatch(String(failed.stderr), /cli/)
    assert.match(String(failed.stderr), /--fix/)
    assert.equal(run('--fix').status, 0)
    assert.equal(readFileSync(join(dir, 'packages/node/src/a.ts'), 'utf8'), '// a -> b\nexport const a = 1\n')
    assert.equal(run().status, 0)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('ascii sources: this repo\'s runtime packages are ASCII', () => {
  const files = runtimeSources()
  assert.ok(files.some((f) => f.startsWith('packages/node/src/')) && !files.some((f) => f.startsWith('packages/cli/')), files.slice(0, 5).join(', '))
  const found = files.flatMap((f) => nonAscii(f, readFileSync(f, 'utf8')))
  assert.deepEqual(found, [])
})
