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

// Every module loaded stays on the heap for good, and every full GC marks it: in the bench's server the
// consumer side and the cluster primary's admin were ~100 KB of it (docs/benchmarks.md).
test('attachGrpc() loads neither the consumer side (@lameduck/grpc/client) nor the cluster primary\'s admin', async () => {
  const out = await builtinsLoadedBy<{ loaded: string[], modules: string[], port: number }>(new URL('./fixtures/footprint-app.ts', import.meta.url))
  assert.ok(out.modules.includes('grpc/attach-grpc.ts') && out.modules.includes('node/cluster-worker.ts'), `the check sees the modules the app loads (got ${out.modules.join(', ')})`)
  assert.deepEqual(out.modules.filter((m) => m.startsWith('grpc/client/') || m === 'node/cluster.ts'), [])
})

test('lameduckResolver() (@lameduck/grpc/client) loads none of the drain engine', async () => {
  const out = await builtinsLoadedBy<{ loaded: string[], packages: string[], modules: string[], target: string }>(new URL('./fixtures/footprint-client.ts', import.meta.url))
  assert.equal(out.target, 'lameduck://footprint/orders')
  assert.ok(out.modules.includes('grpc/client/index.ts'), `the check sees the modules the app loads (got ${out.modules.join(', ')})`)
  assert.deepEqual(out.packages.filter((p) => p === '@lameduck/node'), [])
  assert.deepEqual(out.modules.filter((m) => m.startsWith('grpc/') && !m.startsWith('grpc/client/')), [])
})
