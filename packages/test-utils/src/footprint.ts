import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

/**
 * Parts of Node that stay out of a process until something touches them, and then stay on its
 * heap for good (together about 2 MB, which every full GC marks): an ESM import of node:http,
 * node:crypto, node:fs or node:net loads them through the namespace it builds. What the engine
 * may not load into an app that does not use them.
 */
export const LAZY_BUILTINS: readonly string[] = [
  'NativeModule internal/deps/undici/undici',
  'NativeModule worker_threads',
  'NativeModule perf_hooks',
  'NativeModule internal/crypto/webcrypto',
  'NativeModule internal/fs/streams',
  'NativeModule internal/blocklist'
]

/**
 * Runs a fixture in a fresh Node (from source, without an IPC channel: not a cluster worker, as most
 * apps are not) that prints JSON with `loaded`, the entries of Node's `process.moduleLoadList` it saw
 * appear. Returns what it printed, and which of `unwanted` were loaded.
 */
export async function builtinsLoadedBy<T extends { loaded: string[] }> (fixture: URL, unwanted: readonly string[] = LAZY_BUILTINS): Promise<T & { unwanted: string[] }> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--conditions=@lameduck/source', fixture.pathname], { timeout: 60_000 })
  const printed = JSON.parse(stdout) as T
  return { ...printed, unwanted: unwanted.filter((m) => printed.loaded.includes(m)) }
}
