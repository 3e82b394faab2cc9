// On a Node older than engines allow, the bins and every npm script print one line that
// says so, before anything is built (instead of ERR_UNKNOWN_FILE_EXTENSION or a syntax
// error's stack trace minutes later), and `npm install` stops at once with one EBADENGINE
// error instead of a warning per package. Needs an old Node on the machine
// (LAMEDUCK_OLD_NODE, or one on PATH such as /usr/bin/node).
import assert from 'node:assert/strict'
import { globSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { publicWorkspaces, ROOT } from '../../scripts/pack.ts'
import { cleanEnv, DEAD_REGISTRY, run } from './helpers.ts'

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

const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string }, scripts: Record<string, string> }
const CHECK = 'node scripts/check-node.cjs && '

/** The examples' scripts (`npm start -w @lameduck/example-koa`), which the READMEs tell users to run. */
const examples = globSync('examples/*/package.json', { cwd: ROOT }).map((file) => ({ dir: dirname(file), ...JSON.parse(readFileSync(join(ROOT, file), 'utf8')) as { name: string, scripts?: Record<string, string> } }))

test('every npm script checks the Node version first, against engines', () => {
  for (const [name, script] of Object.entries(root.scripts)) assert.ok(script.startsWith(CHECK), `scripts.${name} starts with ${CHECK}`)
  for (const e of examples) {
    for (const [name, script] of Object.entries(e.scripts ?? {})) assert.ok(script.startsWith('node ../../scripts/check-node.cjs && '), `${e.dir}/package.json scripts.${name}`)
  }
  // The bins' own check (plain JavaScript in each package) names the same minimum.
  const min = /^>=(\d+\.\d+)\.0$/.exec(root.engines.node)![1]!.replace('.', '\\.')
  for (const w of publicWorkspaces()) {
    for (const target of Object.values(w.manifest.bin ?? {})) {
      const shim = readFileSync(join(ROOT, w.dir, target), 'utf8')
      assert.match(shim, new RegExp(`Node\\.js >= ${min} is required`), `${w.dir}/${target}`)
    }
  }
  // On this Node, the check passes without a word.
  const r = run(process.execPath, ['scripts/check-node.cjs'], { cwd: ROOT })
  assert.deepEqual([r.status, r.stdout, r.stderr], [0, '', ''])
})

test('an old Node gets one line from each bin', { skip: node === null && 'no Node older than 22.19 on this machine' }, () => {
  const bins = publicWorkspaces().flatMap((w) => Object.values(w.manifest.bin ?? {}).map((target) => join(ROOT, w.dir, target)))
  assert.ok(bins.length >= 2)
  for (const bin of bins) {
    const r = run(node!, [bin, '--help'], { cwd: ROOT })
    assert.equal(r.status, 1, `${bin} on ${node}`)
    assert.match(r.stderr, REQUIRED)
    assert.equal(r.stdout, '')
  }
})

// npm run with the old Node first on PATH, as on a machine whose default Node is old: the
// scripts' `node` is that one (and so is npm's, when npm sits beside it).
const oldEnv = (): NodeJS.ProcessEnv => cleanEnv({ PATH: `${dirname(node!)}:${process.env.PATH}`, npm_config_registry: DEAD_REGISTRY, npm_config_update_notifier: 'false' })

test('an old Node gets one line from every npm script, before anything runs', { skip: node === null && 'no Node older than 22.19 on this machine' }, () => {
  for (const [name, script] of Object.entries(root.scripts)) {
    const r = run('npm', ['run', name], { cwd: ROOT, env: oldEnv() })
    assert.equal(r.status, 1, `npm run ${name} on ${node}:\n${r.stdout}${r.stderr}`)
    assert.match(r.stderr, /^lameduck: Node\.js >= 22\.19 is required, this is v\d+\.\d+\.\d+ \(nvm use 24, or see https:\/\/nodejs\.org\)\n$/, `npm run ${name}: one line, nothing after it`)
    assert.equal(r.stdout.replace(/^\n> \S+ \S+\n> .*\n\n/, ''), '', `npm run ${name}: npm's banner (> ${script}) and nothing else started`)
  }
  for (const e of examples) {
    for (const name of Object.keys(e.scripts ?? {})) {
      const r = run('npm', ['run', name, '-w', e.name], { cwd: ROOT, env: oldEnv() })
      assert.equal(r.status, 1, `npm run ${name} -w ${e.name} on ${node}:\n${r.stdout}${r.stderr}`)
      assert.match(r.stderr, /^lameduck: Node\.js >= 22\.19 is required, this is v\d+\.\d+\.\d+ \(nvm use 24, or see https:\/\/nodejs\.org\)\n/, `npm run ${name} -w ${e.name}`)
      assert.doesNotMatch(r.stderr, /ERR_|\n {4}at /, `npm run ${name} -w ${e.name}: no stack trace`)
    }
  }
})

test('an old Node: npm install stops at once with one EBADENGINE error, not a warning per package', { skip: node === null && 'no Node older than 22.19 on this machine' }, () => {
  // --dry-run: the repository's node_modules stays as it is, whatever npm decides.
  const r = run('npm', ['install', '--dry-run', '--offline', '--no-audit', '--no-fund'], { cwd: ROOT, env: oldEnv() })
  assert.equal(r.status, 1, `npm install on ${node}:\n${r.stdout}${r.stderr}`)
  assert.match(r.stderr, /npm error code EBADENGINE\n/)
  assert.match(r.stderr, /Not compatible with your version of node\/npm: lameduck-monorepo@/)
  assert.doesNotMatch(r.stderr, /npm warn EBADENGINE/)
  assert.ok(r.stderr.trim().split('\n').length <= 8, `a few lines of npm's, not one warning per package:\n${r.stderr}`)
  assert.doesNotMatch(r.stdout, /^add /m, 'nothing was about to be installed')
})
