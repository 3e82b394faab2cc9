// From a clone, `npx lameduck` and `npx lameduck-devkit` must run the local packages
// right after `npm install`, built or not, and never ask a registry: an unlinked bin
// sends npx looking for an unrelated package of that name.
import assert from 'node:assert/strict'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { publicWorkspaces, ROOT } from '../../scripts/pack.ts'
import { cleanEnv, DEAD_REGISTRY, run } from './helpers.ts'

const bins = publicWorkspaces().flatMap((w) => Object.entries(w.manifest.bin ?? {}).map(([name, target]) => ({ name, dir: w.dir, target: join(w.dir, target) })))

test('the bins are committed, executable shims that npm linked at install time', (t) => {
  for (const name of ['lameduck', 'lameduck-devkit']) assert.ok(bins.some((b) => b.name === name), name)
  const git = run('git', ['ls-files', '--stage', ...bins.map((b) => b.target)], { cwd: ROOT })
  if (git.status !== 0) t.diagnostic('not a git checkout: the file modes are not checked')
  for (const bin of bins) {
    assert.match(readFileSync(join(ROOT, bin.target), 'utf8'), /^#!\/usr\/bin\/env node\n/, `${bin.target}: shebang`)
    if (git.status === 0) assert.match(git.stdout, new RegExp(`^100755 \\S+ 0\\t${bin.target}$`, 'm'), `${bin.target}: committed with mode 100755`)
    const link = join(ROOT, 'node_modules', '.bin', bin.name)
    assert.ok(existsSync(link), `node_modules/.bin/${bin.name}: npm links the shim at install time`)
    assert.equal(realpathSync(link), join(ROOT, bin.target))
  }
})

test('npx runs the local bins with the registry unreachable', () => {
  for (const bin of bins) {
    const r = run('npx', [bin.name, '--help'], { cwd: ROOT, env: cleanEnv({ npm_config_registry: DEAD_REGISTRY }) })
    assert.equal(r.status, 0, `npx ${bin.name} --help:\n${r.stderr}`)
    assert.match(r.stdout, new RegExp(`Usage: ${bin.name} <command>`))
  }
})

test('a shim runs the built entry, or the TypeScript sources without a build or with the source condition', (t) => {
  for (const bin of bins) {
    // The package as a clone has it before `npm run build`: the shim, package.json, src (linked), no dist.
    const pkg = realpathSync(mkdtempSync(join(tmpdir(), 'lameduck-shim-')))
    t.after(() => rmSync(pkg, { recursive: true, force: true }))
    mkdirSync(join(pkg, 'bin'))
    copyFileSync(join(ROOT, bin.target), join(pkg, bin.target.slice(bin.dir.length + 1)))
    copyFileSync(join(ROOT, bin.dir, 'package.json'), join(pkg, 'package.json'))
    symlinkSync(join(ROOT, bin.dir, 'src'), join(pkg, 'src'))
    const shim = join(pkg, bin.target.slice(bin.dir.length + 1))

    const r = run(process.execPath, [shim, '--help'], { cwd: ROOT })
    assert.equal(r.status, 0, `${bin.name} --help without dist:\n${r.stderr}`)
    assert.match(r.stdout, new RegExp(`Usage: ${bin.name} <command>`))

    // With a build, the built entry; the source condition still picks the sources.
    mkdirSync(join(pkg, 'dist'))
    writeFileSync(join(pkg, 'dist', 'bin.js'), 'console.log(\'the built entry\')\n')
    assert.equal(run(process.execPath, [shim, '--help'], { cwd: ROOT }).stdout, 'the built entry\n')
    const sourced = run(process.execPath, ['--conditions=@lameduck/source', shim, '--help'], { cwd: ROOT })
    assert.match(sourced.stdout, new RegExp(`Usage: ${bin.name} <command>`))

    rmSync(join(pkg, 'dist'), { recursive: true })
    rmSync(join(pkg, 'src'))
    const none = run(process.execPath, [shim, '--help'], { cwd: ROOT })
    assert.equal(none.status, 1)
    assert.equal(none.stderr, `${bin.name}: neither dist/bin.js nor src/bin.ts is there; run \`npm run build\`\n`)
  }
})
