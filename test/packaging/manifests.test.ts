// What every package.json must say before a package can be published, checked for
// every workspace there is (a new package under packages/ is covered by being there).
import assert from 'node:assert/strict'
import { existsSync, globSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { publicWorkspaces, ROOT, type Manifest } from '../../scripts/pack.ts'

interface Full extends Manifest {
  repository?: { type: string, url: string, directory?: string }
  homepage?: string
  bugs?: { url: string }
  keywords?: string[]
  license?: string
  files?: string[]
  engines?: { node?: string }
  scripts?: Record<string, string>
}

const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Full
const all = ['packages/*/package.json', 'examples/*/package.json', 'test/package.json']
  .flatMap((p) => globSync(p, { cwd: ROOT }))
  .map((file) => ({ dir: dirname(file), manifest: JSON.parse(readFileSync(join(ROOT, file), 'utf8')) as Full }))
const versions = new Map(all.map((w) => [w.manifest.name, w.manifest.version]))

test('a dependency on another workspace is pinned to its version, not "*"', () => {
  for (const { dir, manifest } of all) {
    for (const field of ['dependencies', 'devDependencies', 'peerDependencies'] as const) {
      for (const [name, range] of Object.entries(manifest[field] ?? {})) {
        if (versions.has(name)) assert.equal(range, `^${versions.get(name)}`, `${dir}/package.json ${field}.${name}`)
      }
    }
  }
})

test('every public package: metadata, prepack build, dist + README + LICENSE, engines, node10 types', () => {
  const license = readFileSync(join(ROOT, 'LICENSE'), 'utf8')
  assert.match(license, /^MIT License\n\nCopyright \(c\) 2026 the lameduck authors\n/)
  assert.ok(root.engines?.node)
  for (const { dir, manifest } of publicWorkspaces() as { dir: string, manifest: Full }[]) {
    const at = `${dir}/package.json`
    assert.equal(manifest.license, 'MIT', at)
    assert.equal(readFileSync(join(ROOT, dir, 'LICENSE'), 'utf8'), license, `${dir}/LICENSE is the root LICENSE`)
    assert.ok(existsSync(join(ROOT, dir, 'README.md')), `${dir}/README.md`)
    assert.deepEqual(manifest.repository, { ...root.repository, directory: dir }, `${at} repository`)
    assert.equal(manifest.bugs?.url, root.bugs?.url, `${at} bugs`)
    assert.ok(manifest.homepage?.startsWith(root.homepage!.replace(/#readme$/, '')), `${at} homepage`)
    assert.ok((manifest.keywords ?? []).length >= 3, `${at} keywords`)
    assert.equal(manifest.engines?.node, root.engines?.node, `${at} engines.node`)
    assert.equal(manifest.scripts?.prepack, 'npm run build', `${at}: prepack builds, so a pack never ships without dist`)
    assert.ok(manifest.files?.includes('dist') && !manifest.files.includes('src'), `${at} files: dist, not src`)
    assert.equal(manifest.types, './dist/index.d.ts', `${at} types (moduleResolution node10 ignores exports)`)
    assert.equal(manifest.main, './dist/index.js', `${at} main`)
    for (const target of Object.values(manifest.bin ?? {})) {
      assert.match(target, /^\.\/bin\/[^/]+\.js$/, `${at} bin: a committed shim, linked at install time even before a build`)
      assert.ok(manifest.files?.includes('bin'), `${at} files: bin`)
    }
  }
})

test('.nvmrc names a Node that engines allow', () => {
  const nvmrc = readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim()
  const min = Number(/>=\s*(\d+)/.exec(root.engines!.node!)![1])
  assert.ok(Number(nvmrc) >= min, `.nvmrc ${nvmrc} vs engines ${root.engines!.node}`)
})
