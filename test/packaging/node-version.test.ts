// On a Node older than engines allow, the bins and `npm start` print one line that says
// so, instead of ERR_UNKNOWN_FILE_EXTENSION or a syntax error's stack trace. Needs an
// old Node on the machine (LAMEDUCK_OLD_NODE, or one on PATH such as /usr/bin/node).
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { publicWorkspaces, ROOT } from '../../scripts/pack.ts'
import { cleanEnv, run } from './helpers.ts'

function oldNode (): string | null {
  const candidates = [process.env.LAMEDUCK_OLD_NODE, '/usr/bin/node', '/usr/local/bin/node',
    ...run('which', ['-a', 'node'], { cwd: ROOT }).stdout.split('\n')].filter((c): c is string => Boolean(c))
  for (const node of candidates) {
    try {
      const [major, minor] = run(node, ['-p', 'process.versions.node'], { cwd: ROOT }).stdout.trim().split('.').map(Number) as [number, number]
      if (major < 22 || (major === 22 && minor < 19)) return node
    } catch {}
  }
  return null
}

const node = oldNode()
const REQUIRED = /^(lameduck|lameduck-devkit): Node\.js >= 22\.19 is required, this is v\d+\.\d+\.\d+ \(nvm use 24, or see https:\/\/nodejs\.org\)\n$/

test('an old Node gets one line from each bin and from npm start', { skip: node === null && 'no Node older than 22.19 on this machine' }, () => {
  const bins = publicWorkspaces().flatMap((w) => Object.values(w.manifest.bin ?? {}).map((target) => join(ROOT, w.dir, target)))
  assert.ok(bins.length >= 2)
  for (const bin of bins) {
    const r = run(node!, [bin, '--help'], { cwd: ROOT })
    assert.equal(r.status, 1, `${bin} on ${node}`)
    assert.match(r.stderr, REQUIRED)
    assert.equal(r.stdout, '')
  }
  // `npm start` exactly as package.json has it, with the old Node first on PATH.
  const start = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start
  assert.match(start, /^node /)
  const r = run(node!, start.replace(/^node /, '').split(' '), { cwd: ROOT, env: cleanEnv() })
  assert.equal(r.status, 1)
  assert.match(r.stderr, REQUIRED)
})
