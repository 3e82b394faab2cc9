// The tarballs `npm run pack` makes are what a team installs until the packages are on
// the registry: packed for real, installed into a project outside the repository
// (our packages from the files only; third-party ones from the registry or the cache),
// imported by name, typed under the resolutions users have, and the bins run.
import assert from 'node:assert/strict'
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { missingFromTarball, pack, publicWorkspaces, ROOT } from '../../scripts/pack.ts'
import { cleanEnv, DEAD_REGISTRY, run } from './helpers.ts'
// The README's install commands, in this file so that its packing never runs beside this one's.
import './readme-installs.ts'

const workspaces = publicWorkspaces()
const names = workspaces.map((w) => w.manifest.name)
/** Entry points besides the packages' own: imported and typed as users write them. */
const subpaths = ['@lameduck/grpc/client']

test('packed tarballs install outside the repository, import by name, type-check and run their bins', async (t) => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'lameduck-install-')))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  assert.ok(!dir.startsWith(ROOT), 'the project must sit outside the repository (no workspace, no node_modules above it)')

  const packed = pack(join(dir, 'tarballs'))
  const tarballs = packed.map((p) => p.tarball)
  assert.deepEqual(packed.find((p) => p.name === '@lameduck/fastify')?.needs.map((f) => f.replace(/.*\//, '')).sort(), ['lameduck-core-0.1.0.tgz', 'lameduck-envoy-0.1.0.tgz', 'lameduck-fastify-0.1.0.tgz', 'lameduck-node-0.1.0.tgz'])
  assert.equal(tarballs.length, workspaces.length)
  for (const w of workspaces) {
    assert.ok(tarballs.some((f) => f.endsWith(`${w.manifest.name.slice(1).replace('/', '-')}-${w.manifest.version}.tgz`)), `${w.manifest.name}: a versioned tarball`)
  }

  const app = join(dir, 'app')
  mkdirSync(app)
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }))
  // npm looks our packages up while resolving (and shrugs off the failure when a tarball
  // already satisfies them); a dead registry for the scope makes sure nothing comes from one.
  const install = run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--fetch-retries=0', `--@lameduck:registry=${DEAD_REGISTRY}`, ...tarballs], { cwd: app })
  assert.equal(install.status, 0, `npm install of the tarballs:\n${install.stderr}`)
  const lock = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8')) as { packages: Record<string, { resolved?: string }> }
  const ours = Object.entries(lock.packages).filter(([path]) => path.includes('node_modules/@lameduck/'))
  assert.deepEqual(ours.map(([path]) => path).sort(), names.map((n) => `node_modules/${n}`).sort(), 'one copy of each package, no nested duplicates')
  for (const [path, entry] of ours) assert.match(entry.resolved ?? '', /^file:.*\.tgz$/, `${path} comes from its tarball`)

  for (const name of names) {
    const installed = join(app, 'node_modules', name)
    assert.ok(!lstatSync(installed).isSymbolicLink(), `${name} is a copy, not a link into the repository`)
    assert.ok(existsSync(join(installed, 'LICENSE')), `${name} ships its LICENSE`)
    assert.ok(!existsSync(join(installed, 'src')), `${name} runs from dist, not from the TypeScript sources`)
  }

  assert.ok(subpaths.every((p) => workspaces.some((w) => p.startsWith(`${w.manifest.name}/`) && Object.hasOwn((w.manifest as { exports?: object }).exports ?? {}, `.${p.slice(w.manifest.name.length)}`))), 'each subpath is an export of its package')
  const entries = [...names, ...subpaths]
  const imported = run(process.execPath, ['--input-type=module', '-e', `
    const out = {}
    for (const name of ${JSON.stringify(entries)}) out[name] = Object.keys(await import(name)).length
    console.log(JSON.stringify(out))`], { cwd: app })
  assert.equal(imported.status, 0, imported.stderr)
  for (const [name, count] of Object.entries(JSON.parse(imported.stdout) as Record<string, number>)) {
    assert.ok(count > 0, `${name} exports something`)
  }

  writeFileSync(join(app, 'index.ts'), entries.map((n, i) => `import * as p${i} from '${n}'\n`).join('') + `export const all = [${entries.map((_, i) => `p${i}`).join(', ')}]\n`)
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
  const base = ['--noEmit', '--strict', '--skipLibCheck', '--typeRoots', join(ROOT, 'node_modules', '@types'), '--types', 'node', 'index.ts']
  for (const [module, resolution, ...more] of [['nodenext', 'nodenext'], ['esnext', 'bundler'], ['commonjs', 'node10', '--ignoreDeprecations', '6.0']]) {
    const typed = run(process.execPath, [tsc, '--module', module!, '--moduleResolution', resolution!, ...more, ...base], { cwd: app })
    assert.equal(typed.status, 0, `types under moduleResolution ${resolution}:\n${typed.stdout}${typed.stderr}`)
  }

  const bins = workspaces.flatMap((w) => Object.keys(w.manifest.bin ?? {}))
  assert.ok(bins.includes('lameduck') && bins.includes('lameduck-devkit'))
  for (const bin of bins) {
    const help = run(join(app, 'node_modules', '.bin', bin), ['--help'], { cwd: app })
    assert.equal(help.status, 0, `${bin} --help:\n${help.stderr}`)
    assert.match(help.stdout, new RegExp(`Usage: ${bin} <command>`))
  }
  const npx = run('npx', ['lameduck', '--help'], { cwd: app, env: cleanEnv({ npm_config_registry: DEAD_REGISTRY }) })
  assert.equal(npx.status, 0, `npx lameduck --help in the project:\n${npx.stderr}`)
  assert.match(npx.stdout, /Usage: lameduck <command>/)
})

test('a package without LICENSE, or a tarball without dist, is refused', (t) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'lameduck-pack-')))
  t.after(() => rmSync(root, { recursive: true, force: true }))
  const pkg = join(root, 'packages', 'x')
  mkdirSync(pkg, { recursive: true })
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'root', private: true, workspaces: ['packages/*'] }))
  // `files` asks for dist, but nothing builds it: npm packs it happily without.
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: '@lameduck/x', version: '0.1.0', main: './dist/index.js', files: ['dist'] }))
  writeFileSync(join(pkg, 'README.md'), '# x\n')
  assert.throws(() => pack(join(root, 'out'), root), /packages\/x\/LICENSE is missing/)

  writeFileSync(join(pkg, 'LICENSE'), 'MIT\n')
  assert.throws(() => pack(join(root, 'out'), root), /lameduck-x-0\.1\.0\.tgz lacks dist\/index\.js/)

  // The same check on what a complete package ships, one file at a time.
  const complete = ['package/package.json', 'package/README.md', 'package/LICENSE', 'package/dist/index.js', 'package/dist/index.d.ts', 'package/bin/x.js']
  const manifest = { name: '@lameduck/x', version: '0.1.0', main: './dist/index.js', types: './dist/index.d.ts', bin: { x: './bin/x.js' } }
  assert.deepEqual(missingFromTarball(manifest, complete), [])
  for (const file of complete) {
    assert.deepEqual(missingFromTarball(manifest, complete.filter((f) => f !== file)), [file.slice('package/'.length)])
  }
})
