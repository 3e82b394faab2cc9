import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

// What attachGrpc() may not add to a grpc-js server's process (see @lameduck/node's footprint.test.ts):
// loaded, these stay on the heap and every full GC marks them, a cost per call.
const NOT_LOADED = [
  'NativeModule internal/deps/undici/undici',
  'NativeModule worker_threads',
  'NativeModule perf_hooks',
  'NativeModule internal/crypto/webcrypto',
  'NativeModule internal/fs/streams',
  'NativeModule internal/blocklist'
]

test('attachGrpc() loads no part of Node a grpc-js server does not use (fetch, WebCrypto, fs streams, perf_hooks)', async () => {
  const app = new URL('./fixtures/footprint-app.ts', import.meta.url)
  const { stdout } = await promisify(execFile)(process.execPath, ['--conditions=@lameduck/source', app.pathname], { timeout: 60_000 })
  const { loaded } = JSON.parse(stdout) as { loaded: string[] }
  const extra = NOT_LOADED.filter((m) => loaded.includes(m))
  assert.deepEqual(extra, [], `loaded by the engine: ${extra.join(', ')}`)
})
