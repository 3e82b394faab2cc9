import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

// Parts of Node that a plain node:http app never loads, and that stay on its heap once loaded (about
// 2 MB together, marked by every full GC). An ESM import of node:http, node:crypto, node:fs or
// node:net loads them; the engine takes those modules when first used instead (builtins.ts). Not
// listed: node:cluster, which every listen() loads.
const NOT_LOADED = [
  'NativeModule internal/deps/undici/undici',
  'NativeModule worker_threads',
  'NativeModule perf_hooks',
  'NativeModule internal/crypto/webcrypto',
  'NativeModule internal/fs/streams',
  'NativeModule internal/blocklist',
  'NativeModule tls',
  'NativeModule http2'
]

test('attach() on a node:http server loads no part of Node the app does not use (fetch, WebCrypto, TLS, HTTP/2, perf_hooks)', async () => {
  const app = new URL('./fixtures/footprint-app.ts', import.meta.url)
  // No IPC channel: the child is not a cluster worker, as most apps are not.
  const { stdout } = await promisify(execFile)(process.execPath, ['--conditions=@lameduck/source', app.pathname], { timeout: 60_000 })
  const { body, loaded } = JSON.parse(stdout) as { body: string, loaded: string[] }
  assert.equal(body, 'ok', 'the app answered through the engine')
  assert.ok(loaded.includes('NativeModule http'), `the check sees what the app loads (got ${loaded.length} modules)`)
  const extra = NOT_LOADED.filter((m) => loaded.includes(m))
  assert.deepEqual(extra, [], `loaded by the engine: ${extra.join(', ')}`)
})
