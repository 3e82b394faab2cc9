// `npm run pack`: builds and packs every public workspace under packages/ into
// versioned tarballs (dist-packages/lameduck-core-0.1.0.tgz, ...) until the packages
// are on the registry, and refuses a tarball that would not work once installed.
//   node scripts/pack.ts               into dist-packages/
//   node scripts/pack.ts --out DIR     into DIR
import { execFileSync } from 'node:child_process'
import { existsSync, globSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { commandOf, specOf } from './install-story.ts'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

export interface Manifest {
  name: string
  version: string
  private?: boolean
  main?: string
  types?: string
  bin?: Record<string, string>
  exports?: Record<string, unknown>
  dependencies?: Record<string, string>
  devDependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
}

export interface Workspace { dir: string, manifest: Manifest }

/** Every workspace under packages/ that is not private: what gets packed (and, later, published). */
export function publicWorkspaces (root = ROOT): Workspace[] {
  return globSync('packages/*/package.json', { cwd: root }).sort()
    .map((file) => ({ dir: dirname(file), manifest: JSON.parse(readFileSync(join(root, file), 'utf8')) as Manifest }))
    .filter((w) => w.manifest.private !== true)
}

/** The files a published package cannot do without, missing from `files` (paths inside the tarball). */
export function missingFromTarball (manifest: Manifest, files: string[]): string[] {
  const have = new Set(files.map((f) => f.replace(/^package\//, '').replace(/^\.\//, '')))
  const need = new Set(['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts'])
  for (const target of [manifest.main, manifest.types, ...Object.values(manifest.bin ?? {})]) {
    if (target) need.add(target.replace(/^\.\//, ''))
  }
  return [...need].filter((f) => !have.has(f))
}

/** `name` and the workspaces it needs at run time, transitively: the tarballs to install together. */
export function closure (name: string, workspaces: Workspace[]): string[] {
  const byName = new Map(workspaces.map((w) => [w.manifest.name, w.manifest]))
  const seen = new Set<string>()
  const visit = (n: string): void => {
    if (seen.has(n) || !byName.has(n)) return
    seen.add(n)
    const m = byName.get(n)!
    for (const dep of Object.keys({ ...m.dependencies, ...m.peerDependencies })) visit(dep)
  }
  visit(name)
  return [...seen]
}

interface PackResult { name: string, filename: string, files: { path: string }[] }

export interface Packed { name: string, tarball: string, needs: string[] }

export function pack (out: string, root = ROOT): Packed[] {
  const workspaces = publicWorkspaces(root)
  for (const w of workspaces) {
    for (const f of ['LICENSE', 'README.md']) {
      if (!existsSync(join(root, w.dir, f))) throw new Error(`${w.dir}/${f} is missing: every package ships one (cp ${f === 'LICENSE' ? 'LICENSE' : 'a README.md'} ${w.dir}/)`)
    }
  }
  mkdirSync(out, { recursive: true })
  for (const w of workspaces) {
    rmSync(join(out, `${w.manifest.name.replace(/^@/, '').replace('/', '-')}-${w.manifest.version}.tgz`), { force: true })
  }
  // Each package's `prepack` builds it (tsc -b), so a tarball never ships without dist.
  const args = ['pack', ...workspaces.map((w) => `--workspace=${w.dir}`), '--pack-destination', out, '--json']
  const stdout = execFileSync('npm', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  const results = JSON.parse(stdout) as PackResult[]
  const problems = results.flatMap((r) => {
    const w = workspaces.find((x) => x.manifest.name === r.name)!
    return missingFromTarball(w.manifest, r.files.map((f) => f.path)).map((f) => `${r.filename} lacks ${f}`)
  })
  if (problems.length > 0) throw new Error(`refusing the tarballs:\n  ${problems.join('\n  ')}`)
  const tarballOf = new Map(results.map((r) => [r.name, join(out, r.filename)]))
  return results.map((r) => ({ name: r.name, tarball: tarballOf.get(r.name)!, needs: closure(r.name, workspaces).map((n) => tarballOf.get(n)!) }))
}

if (import.meta.main) {
  const at = process.argv.indexOf('--out')
  const out = resolve(at === -1 ? join(ROOT, 'dist-packages') : process.argv[at + 1]!)
  try {
    const packed = pack(out)
    // A package's @lameduck dependencies go in the same command (npm would look them up on the registry
    // otherwise): the commands of the READMEs' install blocks, from the same graph (scripts/install-story.ts).
    const workspaces = publicWorkspaces()
    console.log(`\n${packed.length} tarballs in ${out}. To install a package into your project, with what it needs:\n\n  T=${out}`)
    for (const p of packed) console.log(`\n  # ${p.name}\n  ${commandOf(specOf(p.name), workspaces).replaceAll('\n', '\n  ')}`)
    console.log('\nThe devkit goes in first; a runtime package\'s --save-prod then keeps what the service needs in dependencies.')
  } catch (err) {
    console.error(`pack: ${(err as Error).message}`)
    process.exitCode = 1
  }
}
