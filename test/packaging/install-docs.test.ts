// Every README's install command is generated from the package graph (scripts/install-story.ts):
// a block out of step with it, a package without one, or a README that sends users to the
// registry for a name this project has not published there fails here.
import assert from 'node:assert/strict'
import { globSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { publicWorkspaces, ROOT } from '../../scripts/pack.ts'
import { blocksOf, readmes, rewrite, stale, tarballsOf } from '../../scripts/install-story.ts'
import { run } from './helpers.ts'

const workspaces = publicWorkspaces()

test('every README install block is what the package graph says (npm run docs:install rewrites them)', () => {
  assert.deepEqual(stale(), [], 'run: npm run docs:install')
  const check = run(process.execPath, ['scripts/install-story.ts', '--check'], { cwd: ROOT })
  assert.equal(check.status, 0, check.stderr)
})

test('every public package\'s README has its own install block; the devkit\'s installs into devDependencies', () => {
  for (const w of workspaces) {
    const blocks = blocksOf(readFileSync(join(ROOT, w.dir, 'README.md'), 'utf8'), workspaces)
    const own = blocks.filter((b) => b.spec.roots.includes(w.manifest.name))
    assert.ok(own.length > 0, `${w.dir}/README.md: an <!-- install:start ${w.manifest.name} --> block`)
    if (w.manifest.name === '@lameduck/devkit') assert.ok(own.every((b) => b.spec.kind === 'dev'), 'the devkit goes in with --save-dev')
    else assert.ok(own.every((b) => b.spec.kind !== 'dev'), `${w.manifest.name} is a runtime package`)
  }
  const root = blocksOf(readFileSync(join(ROOT, 'README.md'), 'utf8'), workspaces)
  assert.ok(root.some((b) => b.spec.roots.includes('@lameduck/fastify') && b.spec.roots.includes('@lameduck/eureka')), 'the root README: Fastify + Eureka')
  assert.ok(root.some((b) => b.spec.kind === 'dockerfile'), 'the root README: the CLI in an image')
})

test('no document tells users to install an @lameduck name from the registry', () => {
  const docs = [...readmes(), ...globSync('{docs,examples/k8s,packages/*/src/**}/*.{md,yaml}', { cwd: ROOT }), 'CONTRIBUTING.md', 'SECURITY.md']
  const registryInstall = /\bnpm (install|i|add)\b(?![^`\n]*\$T\/)(?![^`\n]*\/tmp\/lameduck\/)[^`\n]*@lameduck\//
  for (const file of docs) {
    // Outside the generated blocks, whose commands name tarballs.
    const text = readFileSync(join(ROOT, file), 'utf8').replace(/<!-- install:start[\s\S]*?<!-- install:end -->/g, '')
    text.split('\n').forEach((line, i) => assert.doesNotMatch(line, registryInstall, `${file}:${i + 1}`))
  }
})

test('a stale block is rewritten from the graph; a block naming an unknown package or flag is refused', () => {
  const fastify = { kind: 'dependencies' as const, roots: ['@lameduck/fastify', '@lameduck/eureka'], extra: ['fastify'] }
  assert.deepEqual(tarballsOf(fastify, workspaces), ['lameduck-fastify-0.1.0.tgz', 'lameduck-eureka-0.1.0.tgz', 'lameduck-core-0.1.0.tgz', 'lameduck-envoy-0.1.0.tgz', 'lameduck-node-0.1.0.tgz'])
  // What the README said before: the node tarball left out, so npm asked the registry (E404).
  const old = '<!-- install:start @lameduck/fastify @lameduck/eureka fastify -->\n```sh\nnpm install $T/lameduck-fastify-0.1.0.tgz $T/lameduck-core-0.1.0.tgz $T/lameduck-envoy-0.1.0.tgz \\\n  $T/lameduck-eureka-0.1.0.tgz fastify\n```\n<!-- install:end -->\n'
  const fixed = rewrite(old, workspaces)
  assert.notEqual(fixed, old)
  assert.match(fixed, /\$T\/lameduck-node-0\.1\.0\.tgz/)
  assert.equal(rewrite(fixed, workspaces), fixed, 'a current block stays as it is')
  assert.deepEqual(blocksOf(fixed, workspaces).map((b) => b.spec), [fastify])
  const block = (spec: string): string => `<!-- install:start ${spec} -->\n<!-- install:end -->`
  assert.throws(() => rewrite(block('@lameduck/nope'), workspaces), /@lameduck\/nope is not a public package/)
  assert.throws(() => rewrite(block('--save-optional @lameduck/core'), workspaces), /the flag must be one of/)
  assert.throws(() => rewrite(block('--global @lameduck/cli fastify'), workspaces), /third-party packages only in a project install/)
  assert.throws(() => rewrite(block('fastify'), workspaces), /names no @lameduck package/)
})
