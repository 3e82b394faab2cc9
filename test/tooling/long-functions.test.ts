import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { longFunctions, MAX_LINES } from '../../scripts/long-functions.ts'

const script = fileURLToPath(new URL('../../scripts/long-functions.ts', import.meta.url))
const body = (n: number): string => Array.from({ length: n }, (_, i) => `  const v${i} = ${i}`).join('\n')

test('long functions: a function over the limit is found and named by where it sits; one at the limit is not', () => {
  const text = [
    `export function atLimit () {\n${body(MAX_LINES - 2)}\n}`,
    `export function outer () {\n  server.on('request', (req) => {\n${body(MAX_LINES)}\n  })\n}`,
    `class A {\n  method () {\n${body(MAX_LINES)}\n  }\n}`,
    `const arrow = () => {\n${body(MAX_LINES)}\n}`
  ].join('\n')
  const found = longFunctions('x.ts', text).map((f) => `${f.name} ${f.lines}`)
  assert.deepEqual(found, [
    `outer ${MAX_LINES + 4}`,
    `outer.on(request) ${MAX_LINES + 2}`,
    `method ${MAX_LINES + 2}`,
    `arrow ${MAX_LINES + 2}`
  ])
})

test('long functions: the check fails on a new long function, and passes once it is allowed with a reason', () => {
  const dir = mkdtempSync(join(tmpdir(), 'long-functions-'))
  try {
    mkdirSync(join(dir, 'packages/p/src'), { recursive: true })
    mkdirSync(join(dir, 'scripts'))
    writeFileSync(join(dir, 'packages/p/src/a.ts'), `export function big () {\n${body(MAX_LINES)}\n}\n`)
    const check = (allowed: unknown[]): ReturnType<typeof spawnSync> => {
      writeFileSync(join(dir, 'scripts/long-functions.allow.json'), JSON.stringify(allowed))
      return spawnSync(process.execPath, [script], { cwd: dir, encoding: 'utf8' })
    }
    const fresh = check([])
    assert.equal(fresh.status, 1)
    assert.match(String(fresh.stdout), /packages\/p\/src\/a\.ts:1 big 62 lines/)
    assert.equal(check([{ file: 'packages/p/src/a.ts', name: 'big', reason: 'a test' }]).status, 0)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
