// `npm run lockfile:check`: fails when package-lock.json lacks an entry that some
// locked package depends on, most often another platform's optional binary
// (@turbo/darwin-arm64, @esbuild/win32-x64, ...). npm drops those silently when the
// registry it resolved through did not serve them, and `npm ci` then refuses the lock
// on every machine ("Missing: ... from lock file").
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from './pack.ts'

interface LockEntry {
  link?: boolean
  dependencies?: Record<string, string>
  devDependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  peerDependenciesMeta?: Record<string, { optional?: boolean }>
}

/** Where Node would look for `name` from the lock entry at `from` (a `node_modules/...` path or a workspace dir). */
function candidates (from: string, name: string): string[] {
  const out: string[] = []
  let dir = from
  for (;;) {
    out.push(dir === '' ? `node_modules/${name}` : `${dir}/node_modules/${name}`)
    const at = dir.lastIndexOf('/node_modules/')
    if (at === -1) break
    dir = dir.slice(0, at)
  }
  // A workspace or a hoisted package also sees the root's node_modules.
  if (from !== '' && !out.includes(`node_modules/${name}`)) out.push(`node_modules/${name}`)
  return out
}

/** Every `dependent → dependency` edge of the lock that no lock entry satisfies. */
export function missingLockEntries (lock: { packages: Record<string, LockEntry> }): string[] {
  const { packages } = lock
  const missing: string[] = []
  for (const [path, entry] of Object.entries(packages)) {
    if (entry.link) continue
    const names = [
      ...Object.keys(entry.dependencies ?? {}),
      // Only the root and the workspaces list these, and their development tools are locked too.
      ...Object.keys(entry.devDependencies ?? {}),
      ...Object.keys(entry.optionalDependencies ?? {}),
      // A required peer is installed by npm 7+ and so is locked; an optional one need not be.
      ...Object.keys(entry.peerDependencies ?? {}).filter((n) => entry.peerDependenciesMeta?.[n]?.optional !== true)
    ]
    for (const name of new Set(names)) {
      if (!candidates(path, name).some((c) => c in packages)) missing.push(`${path || '(root)'} → ${name}`)
    }
  }
  return missing
}

if (import.meta.main) {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> }
  const missing = missingLockEntries(lock)
  if (missing.length > 0) {
    console.error(`package-lock.json lacks ${missing.length} entr${missing.length === 1 ? 'y' : 'ies'}:\n  ${missing.join('\n  ')}`)
    console.error('\nThe registry npm resolved through did not serve them. Complete the lock against one that does:\n  npm install --package-lock-only --registry=https://registry.npmjs.org/')
    process.exitCode = 1
  } else {
    console.log(`package-lock.json: complete (${Object.keys(lock.packages).length} entries)`)
  }
}
