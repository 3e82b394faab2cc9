// undici is loaded at the first admin request, not with the package: every app on the engine
// imports @lameduck/envoy, most without a sidecar, and undici is ~5.5 MB of heap per process.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { test } from 'node:test'
import { ENVOY_ERROR_CODES, envoyAdmin } from '../src/index.ts'
import { fakeAdmin } from './fake-admin.ts'

/** Runs `body` in a fresh Node (ESM) and returns what it printed: whether undici is in the module cache after it. */
async function undiciLoadedAfter (body: string): Promise<string> {
  const script = `import { createRequire } from 'node:module'
const { envoyAdmin } = await import('@lameduck/envoy')
${body}
console.log(Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('/node_modules/undici/')) ? 'loaded' : 'not loaded')`
  // Not execFileSync: the fake admin the child calls lives in this process's event loop.
  const { stdout } = await promisify(execFile)(process.execPath, [...process.execArgv.filter((a) => a.startsWith('--conditions')), '--input-type=module', '-e', script], { cwd: new URL('..', import.meta.url), encoding: 'utf8' })
  return stdout.trim().split('\n').pop()!
}

test('importing the package and making a client loads no undici; the first request does', async (t) => {
  assert.equal(await undiciLoadedAfter("envoyAdmin({ url: 'http://127.0.0.1:15000' })"), 'not loaded')
  const server = await fakeAdmin(() => ({ body: 'LIVE' }))
  t.after(() => server.close())
  assert.equal(await undiciLoadedAfter(`const a = envoyAdmin({ url: '${server.url}' }); await a.ready(); await a.close()`), 'loaded')
})

test('a request after close() fails with a clear error, also when the client never made one', async (t) => {
  const server = await fakeAdmin(() => ({ body: 'LIVE' }))
  t.after(() => server.close())
  for (const used of [false, true]) {
    const admin = envoyAdmin({ url: server.url })
    if (used) await admin.ready()
    await admin.close()
    await assert.rejects(admin.ready(), (err: Error & { code?: string }) => err.code === ENVOY_ERROR_CODES.RESPONSE && /closed/.test(err.message))
  }
  assert.equal(server.requests.length, 1, 'nothing reached Envoy after close()')
})
