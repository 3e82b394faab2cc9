import { test } from 'node:test'
import assert from 'node:assert/strict'
import { builtinsLoadedBy, LAZY_BUILTINS } from '@lameduck/test-utils'

// The engine takes Node's built-ins when first used (builtins.ts). Besides test-utils' list, a plain
// HTTP app never loads TLS or HTTP/2. Not listed: node:cluster, which every listen() loads.
test('attach() on a node:http server loads no part of Node the app does not use (fetch, WebCrypto, TLS, HTTP/2, perf_hooks)', async () => {
  const out = await builtinsLoadedBy<{ loaded: string[], body: string }>(new URL('./fixtures/footprint-app.ts', import.meta.url), [...LAZY_BUILTINS, 'NativeModule tls', 'NativeModule http2'])
  assert.equal(out.body, 'ok', 'the app answered through the engine')
  assert.ok(out.loaded.includes('NativeModule http'), `the check sees what the app loads (got ${out.loaded.length} modules)`)
  assert.deepEqual(out.unwanted, [], `loaded by the engine: ${out.unwanted.join(', ')}`)
})

// V8 compiles the caches of EventEmitter's constructor, which every request's IncomingMessage and
// ServerResponse run, for the few shapes its first calls see: two more emitters at start-up cost a
// hello world ~700 instructions per request (core's emitter.ts). The engine constructs only its admin listener.
test('attach() constructs no EventEmitter but its admin listener (a node:http Server)', async () => {
  const out = await builtinsLoadedBy<{ loaded: string[], emitters: string[] }>(new URL('./fixtures/footprint-app.ts', import.meta.url))
  assert.deepEqual(out.emitters, ['Server'])
})

// Without an SDK the OpenTelemetry observer reads the API's global registration (otel-global.ts) and
// loads nothing: the API's ESM build is 52 modules, about 500 KB on the heap of an app that has no SDK.
test('attach() without an OpenTelemetry SDK, or with no sidecar, loads neither @opentelemetry/api nor @lameduck/envoy', async () => {
  const out = await builtinsLoadedBy<{ loaded: string[], packages: string[] }>(new URL('./fixtures/footprint-app.ts', import.meta.url))
  assert.ok(out.packages.includes('@lameduck/node'), `the check sees the packages the app loads (got ${out.packages.join(', ')})`)
  assert.deepEqual(out.packages.filter((p) => p === '@opentelemetry/api' || p === '@lameduck/envoy'), [])
})
