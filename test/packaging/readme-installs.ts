// A new user's first step, for every package: from a fresh directory outside the clone, run
// exactly the command a README's install block gives (the tarballs' directory put in for `$T`),
// then import what it installed and run its bins. Our packages come from the tarballs only: a
// tarball left out of a command fails here (npm would ask the registry for it: E404), and the
// devkit's story keeps the runtime packages in `dependencies` through `npm ci --omit=dev`.
// Imported by install.test.ts, so that the two never pack at once (each pack builds the
// packages in the clone, and two builds of one package at once can trip over each other).
import assert from 'node:assert/strict'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { before, after, describe, test } from 'node:test'
import { pack, publicWorkspaces, ROOT } from '../../scripts/pack.ts'
import { blocksOf, IMAGE_DIR, readmes, T_LINE, type Spec } from '../../scripts/install-story.ts'
import { cleanEnv, DEAD_REGISTRY, run, type Ran } from './helpers.ts'

const workspaces = publicWorkspaces()
const binsOf = (name: string): string[] => Object.keys(workspaces.find((w) => w.manifest.name === name)!.manifest.bin ?? {})

// Every distinct block, with the READMEs that give it.
const blocks = new Map<string, { spec: Spec, body: string, files: string[] }>()
for (const file of readmes()) {
  for (const b of blocksOf(readFileSync(join(ROOT, file), 'utf8'), workspaces)) {
    const seen = blocks.get(b.body)
    if (seen) seen.files.push(file)
    else blocks.set(b.body, { ...b, files: [file] })
  }
}

/** The commands of a block as a shell runs them: the fence off, `$T` the real directory. */
function script (body: string, tarballs: string): string {
  const lines = body.split('\n').slice(1, -1)
  if (lines[0] === T_LINE) lines[0] = `T=${tarballs}`
  return lines.join('\n')
}

describe('the README install commands, run from a fresh directory outside the clone', () => {
  let dir: string
  let tarballs: string
  // Nothing of ours may come from a registry; third-party packages from the registry or the cache.
  const env = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => cleanEnv({ 'npm_config_@lameduck:registry': DEAD_REGISTRY, npm_config_fetch_retries: '0', npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false', ...extra })
  const bash = (text: string, cwd: string, extra: NodeJS.ProcessEnv = {}): Ran => run('bash', ['-euo', 'pipefail', '-c', text], { cwd, env: env(extra) })
  const project = (name: string): string => {
    const app = join(dir, name)
    mkdirSync(app)
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }))
    return app
  }
  const manifest = (app: string): { dependencies?: Record<string, string>, devDependencies?: Record<string, string> } => JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'))
  const importsAll = (app: string, names: string[]): void => {
    const r = run(process.execPath, ['--input-type=module', '-e', `for (const n of ${JSON.stringify(names)}) await import(n)`], { cwd: app })
    assert.equal(r.status, 0, `import ${names.join(', ')}:\n${r.stderr}`)
  }
  const runsHelp = (bin: string, cwd: string): void => {
    const r = run(bin, ['--help'], { cwd })
    assert.equal(r.status, 0, `${bin} --help:\n${r.stderr}`)
    assert.match(r.stdout, /Usage: \S+ <command>/)
  }

  before(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'lameduck-readme-')))
    assert.ok(!dir.startsWith(ROOT), 'outside the repository: no workspace, no node_modules above it')
    tarballs = join(dir, 'tarballs')
    pack(tarballs)
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  let n = 0
  for (const { spec, body, files } of blocks.values()) {
    test(`${files.join(', ')}: ${spec.kind} ${[...spec.roots, ...spec.extra].join(' ')}`, () => {
      const app = project(`app-${++n}`)
      if (spec.kind === 'dependencies' || spec.kind === 'dev') {
        const r = bash(script(body, tarballs), app)
        assert.equal(r.status, 0, `the README's command:\n${r.stderr}`)
        const field = spec.kind === 'dev' ? 'devDependencies' : 'dependencies'
        for (const name of [...spec.roots, ...spec.extra]) assert.ok(manifest(app)[field]?.[name], `${name} in ${field}`)
        importsAll(app, [...spec.roots, ...spec.extra])
        for (const bin of spec.roots.flatMap(binsOf)) runsHelp(join(app, 'node_modules', '.bin', bin), app)
        return
      }
      // --global and the Dockerfile's RUN: into a prefix of the test's own, not the machine's.
      const prefix = join(dir, `global-${n}`)
      let text = script(body, tarballs)
      if (spec.kind === 'dockerfile') {
        const copy = join(dir, `image-${n}`)
        cpSync(tarballs, copy, { recursive: true }) // COPY vendor/lameduck/ /tmp/lameduck/
        const [, runLine] = /^RUN ([\s\S]*)$/m.exec(text.replace(/^COPY .*\n/, ''))!
        text = runLine!.replaceAll(IMAGE_DIR, copy)
      }
      const r = bash(text, app, { npm_config_prefix: prefix })
      assert.equal(r.status, 0, `the README's command:\n${r.stderr}`)
      for (const bin of spec.roots.flatMap(binsOf)) runsHelp(join(prefix, 'bin', bin), app)
    })
  }

  test('the devkit\'s story: devDependencies first, then the runtime command; npm ci --omit=dev keeps the runtime packages', () => {
    const devkit = [...blocks.values()].find((b) => b.spec.kind === 'dev' && b.spec.roots.includes('@lameduck/devkit'))!
    const runtime = [...blocks.values()].find((b) => b.files.includes('README.md') && b.spec.roots.includes('@lameduck/fastify'))!
    const app = project('devkit-story')
    // A service that had its runtime packages already, then adds the devkit, then runs its runtime command again.
    for (const step of [runtime, devkit, runtime]) {
      const r = bash(script(step.body, tarballs), app)
      assert.equal(r.status, 0, r.stderr)
    }
    const deps = manifest(app)
    for (const name of ['@lameduck/fastify', '@lameduck/eureka', '@lameduck/core', '@lameduck/node', '@lameduck/envoy', 'fastify']) {
      assert.ok(deps.dependencies?.[name], `${name} in dependencies`)
      assert.equal(deps.devDependencies?.[name], undefined, `${name} not in devDependencies`)
    }
    assert.ok(deps.devDependencies?.['@lameduck/devkit'])
    rmSync(join(app, 'node_modules'), { recursive: true })
    const ci = bash('npm ci --omit=dev', app)
    assert.equal(ci.status, 0, ci.stderr)
    assert.deepEqual(readdirSync(join(app, 'node_modules', '@lameduck')).sort(), ['core', 'envoy', 'eureka', 'fastify', 'node'])
    importsAll(app, ['@lameduck/fastify', '@lameduck/eureka', 'fastify'])
    assert.ok(!existsSync(join(app, 'node_modules', '@lameduck', 'devkit')))
  })
})
