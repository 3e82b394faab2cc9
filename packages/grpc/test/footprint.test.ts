import { test } from 'node:test'
import assert from 'node:assert/strict'
import { builtinsLoadedBy } from '@lameduck/test-utils'

// Loaded, these parts of Node stay on the heap and every full GC marks them: a cost per call.
test('attachGrpc() loads no part of Node a grpc-js server does not use (fetch, WebCrypto, fs streams, perf_hooks)', async () => {
  const out = await builtinsLoadedBy<{ loaded: string[], port: number }>(new URL('./fixtures/footprint-app.ts', import.meta.url))
  assert.ok(out.port > 0, 'the attached server was bound')
  assert.deepEqual(out.unwanted, [], `loaded by the engine: ${out.unwanted.join(', ')}`)
})

test('attachGrpc() without an OpenTelemetry SDK, or with no sidecar, loads neither @opentelemetry/api nor @lameduck/envoy', async () => {
  const out = await builtinsLoadedBy<{ loaded: string[], packages: string[], port: number }>(new URL('./fixtures/footprint-app.ts', import.meta.url))
  assert.ok(out.packages.includes('@lameduck/grpc'), `the check sees the packages the app loads (got ${out.packages.join(', ')})`)
  assert.deepEqual(out.packages.filter((p) => p === '@opentelemetry/api' || p === '@lameduck/envoy'), [])
})
