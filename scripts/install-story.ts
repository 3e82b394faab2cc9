// One install story, generated from the package graph: every README's install command sits
// between markers that name what it installs, and this script writes the command (each
// named @lameduck package's tarball and the tarballs of every @lameduck package it needs),
// so no README can leave one out (npm would look it up on the registry: E404).
//   node scripts/install-story.ts           rewrite the marked blocks of every README
//   node scripts/install-story.ts --check   list the stale ones and exit 1 (test/packaging runs it)
//
// A block: <!-- install:start [--save-dev | --global | --dockerfile] @lameduck/a [@lameduck/b] [third-party ...] -->
//          (generated text)
//          <!-- install:end -->
// Runtime packages go in with --save-prod, so they land in `dependencies` even where the devkit's
// --save-dev command had put them in `devDependencies` (`npm ci --omit=dev` would drop them).
import { globSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { closure, publicWorkspaces, ROOT, type Manifest, type Workspace } from './pack.ts'

export type Kind = 'dependencies' | 'dev' | 'global' | 'dockerfile'

export interface Spec {
  kind: Kind
  /** Our packages the block installs (each with what it needs). */
  roots: string[]
  /** Third-party packages appended as they are, e.g. `fastify`. */
  extra: string[]
}

/** The placeholder the blocks use for the tarballs' directory; the packaging test sets it. */
export const T_LINE = 'T=/path/to/lameduck/dist-packages   # the tarballs `npm run pack` wrote in a clone of lameduck'
/** Where the Dockerfile block copies the tarballs to (they sit in vendor/lameduck/ of the app's repository). */
export const IMAGE_DIR = '/tmp/lameduck'

const START = /<!-- install:start ([^>]*?) -->\n[\s\S]*?<!-- install:end -->/g
const FLAGS: Record<string, Kind> = { '--save-dev': 'dev', '--global': 'global', '--dockerfile': 'dockerfile' }
/** Packages for development and tests only: their story is --save-dev. */
export const DEV_ONLY = new Set(['@lameduck/devkit'])

export const tarballName = (m: Manifest): string => `${m.name.replace(/^@/, '').replace('/', '-')}-${m.version}.tgz`

export function parseSpec (text: string, workspaces: Workspace[]): Spec {
  const words = text.trim().split(/\s+/)
  const kind = words[0]!.startsWith('--') ? FLAGS[words.shift()!] : 'dependencies'
  if (kind === undefined) throw new Error(`install block "${text}": the flag must be one of ${Object.keys(FLAGS).join(', ')}`)
  const known = new Set(workspaces.map((w) => w.manifest.name))
  const roots = words.filter((w) => w.startsWith('@lameduck/'))
  for (const r of roots) if (!known.has(r)) throw new Error(`install block "${text}": ${r} is not a public package (${[...known].join(', ')})`)
  if (roots.length === 0) throw new Error(`install block "${text}": names no @lameduck package`)
  const extra = words.filter((w) => !w.startsWith('@lameduck/'))
  if (extra.length > 0 && (kind === 'global' || kind === 'dockerfile')) throw new Error(`install block "${text}": third-party packages only in a project install`)
  return { kind, roots, extra }
}

/** The tarballs a spec installs: the roots in the order given, then what they need, by name. */
export function tarballsOf (spec: Spec, workspaces: Workspace[]): string[] {
  const byName = new Map(workspaces.map((w) => [w.manifest.name, w.manifest]))
  const needed = new Set(spec.roots.flatMap((r) => closure(r, workspaces)))
  const rest = [...needed].filter((n) => !spec.roots.includes(n)).sort()
  return [...spec.roots, ...rest].map((n) => tarballName(byName.get(n)!))
}

/** `words` joined into shell lines of at most ~100 characters, continued with a backslash. */
function wrap (first: string, words: string[], indent: string): string {
  const lines = [first]
  for (const w of words) {
    if (`${lines.at(-1)!} ${w}`.length > 100) lines.push(indent + w)
    else lines[lines.length - 1] += ` ${w}`
  }
  return lines.join(' \\\n')
}

/** The shell command of a project or global install (`$T` for the tarballs' directory). */
export function commandOf (spec: Spec, workspaces: Workspace[]): string {
  if (spec.kind === 'dockerfile') throw new Error('a Dockerfile block has no shell command of its own')
  const flag = { dependencies: '--save-prod', dev: '--save-dev', global: '--global' }[spec.kind]
  return wrap(`npm install ${flag}`, [...tarballsOf(spec, workspaces).map((f) => `$T/${f}`), ...spec.extra], '  ')
}

/** The text a block holds, code fence included. */
export function render (spec: Spec, workspaces: Workspace[]): string {
  if (spec.kind === 'dockerfile') {
    const files = tarballsOf(spec, workspaces).map((f) => `${IMAGE_DIR}/${f}`)
    const run = wrap('RUN npm install --global', [...files, '&&', 'rm', '-rf', IMAGE_DIR], '      ')
    return `\`\`\`dockerfile\nCOPY vendor/lameduck/ ${IMAGE_DIR}/\n${run}\n\`\`\``
  }
  return `\`\`\`sh\n${T_LINE}\n${commandOf(spec, workspaces)}\n\`\`\``
}

/** `text` with every install block regenerated. */
export function rewrite (text: string, workspaces: Workspace[]): string {
  return text.replace(START, (_, spec: string) => `<!-- install:start ${spec} -->\n${render(parseSpec(spec, workspaces), workspaces)}\n<!-- install:end -->`)
}

/** Every install block of `text`: its spec and what it says now. */
export function blocksOf (text: string, workspaces: Workspace[]): { spec: Spec, body: string }[] {
  return [...text.matchAll(START)].map((m) => ({ spec: parseSpec(m[1]!, workspaces), body: m[0].split('\n').slice(1, -1).join('\n') }))
}

/** The READMEs that carry install blocks (or could): the root's, each package's, each example's. */
export function readmes (root = ROOT): string[] {
  return ['README.md', ...['packages/*/README.md', 'examples/*/README.md'].flatMap((p) => globSync(p, { cwd: root }).sort())]
}

/** The READMEs whose blocks are not what the graph says, by path. */
export function stale (root = ROOT): string[] {
  const workspaces = publicWorkspaces(root)
  return readmes(root).filter((f) => {
    const text = readFileSync(join(root, f), 'utf8')
    return rewrite(text, workspaces) !== text
  })
}

/** The spec of one package's own story: the devkit's is --save-dev, every other's a dependency. */
export const specOf = (name: string): Spec => ({ kind: DEV_ONLY.has(name) ? 'dev' : 'dependencies', roots: [name], extra: [] })

if (import.meta.main) {
  const workspaces = publicWorkspaces()
  if (process.argv.includes('--check')) {
    const files = stale()
    if (files.length > 0) {
      console.error(`install blocks out of step with the package graph in: ${files.join(', ')}\nrun: npm run docs:install`)
      process.exitCode = 1
    }
  } else {
    for (const f of readmes()) {
      const text = readFileSync(join(ROOT, f), 'utf8')
      const next = rewrite(text, workspaces)
      if (next !== text) {
        writeFileSync(join(ROOT, f), next)
        console.log(`rewrote the install blocks of ${f}`)
      }
    }
  }
}
