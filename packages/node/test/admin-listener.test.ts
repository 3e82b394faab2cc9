// The admin listener itself (plain node:http): methods per route, HEAD, the token
// before the routing, a failing backend, close() with a waiting /offline, and that
// the engine brings no web framework into the app's process.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { Readable } from 'node:stream'
import { request } from 'undici'
import { silentLogger, type Logger } from '@lameduck/core'
import { serveAdmin } from '../src/admin.ts'
import type { AdminAnswer, AdminBackend } from '../src/admin-actions.ts'

function backend (overrides: Partial<AdminBackend> = {}): AdminBackend & { calls: string[] } {
  const calls: string[] = []
  return {
    calls,
    state: () => 'serving',
    status: async () => ({ state: 'serving' }),
    metrics: async () => 'lameduck_up 1\n',
    offline: async (wait): Promise<AdminAnswer> => { calls.push(`offline wait=${wait}`); return { statusCode: 202, body: { state: 'draining' } } },
    online: async (wait): Promise<AdminAnswer> => { calls.push(`online wait=${wait}`); return { statusCode: 202, body: { state: 'serving' } } },
    ...overrides
  }
}

function memoryLogger (): Logger & { lines: Array<{ level: string, obj: Record<string, unknown>, msg: string }> } {
  const lines: Array<{ level: string, obj: Record<string, unknown>, msg: string }> = []
  const at = (level: string) => (obj: object, msg?: string): void => { lines.push({ level, obj: obj as Record<string, unknown>, msg: msg ?? '' }) }
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

test('each route takes its methods: 405 with Allow otherwise, HEAD answers /status and /metrics and never acts', async (t) => {
  const b = backend()
  const admin = await serveAdmin({ host: '127.0.0.1', port: 0, token: undefined, logger: silentLogger }, b)
  t.after(() => admin.close())
  for (const [path, method, allow] of [['/offline', 'HEAD', 'GET, POST'], ['/online', 'PUT', 'GET, POST'], ['/status', 'POST', 'GET, HEAD'], ['/metrics', 'DELETE', 'GET, HEAD']] as const) {
    const res = await request(`${admin.url}${path}`, { method })
    assert.equal(res.statusCode, 405, `${method} ${path}`)
    assert.equal(res.headers.allow, allow, `${method} ${path}`)
    await res.body.dump()
  }
  assert.deepEqual(b.calls, [], 'no action ran')
  for (const path of ['/status', '/metrics']) {
    const get = await request(`${admin.url}${path}`)
    const text = await get.body.text()
    const head = await request(`${admin.url}${path}`, { method: 'HEAD' })
    assert.equal(head.statusCode, 200, path)
    assert.equal(head.headers['content-type'], get.headers['content-type'], path)
    assert.equal(Number(head.headers['content-length']), Buffer.byteLength(text), `${path}: the length GET would send`)
    assert.equal(await head.body.text(), '', `${path}: no body`)
  }
  const missing = await request(`${admin.url}/offline/now`)
  assert.equal(missing.statusCode, 404)
  assert.match((await missing.body.json() as { message: string }).message, /^no admin route GET \/offline\/now; the routes are \/offline, \/online, \/status, \/metrics$/)
  assert.notEqual(missing.headers.connection, 'close', 'a refusal without a body keeps the connection')
  const big = await request(`${admin.url}/offline`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: Readable.from(['x'.repeat(800), 'x'.repeat(800), 'x'.repeat(800)]) })
  assert.equal(big.statusCode, 413, 'a chunked body over 1 KiB')
  assert.equal(big.headers.connection, 'close', 'the rest of it is not read: the connection closes after the answer')
  assert.match((await big.body.json() as { message: string }).message, /at most 1024 bytes/)
  assert.deepEqual(b.calls, [], 'and nothing ran')
  const ok = await request(`${admin.url}/offline?wait=0`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  assert.equal(ok.statusCode, 202)
  assert.equal(ok.headers['content-type'], 'application/json; charset=utf-8')
  assert.deepEqual(await ok.body.json(), { state: 'draining' })
  assert.deepEqual(b.calls, ['offline wait=false'])
})

test('with a token, a caller without it learns nothing: 401 on unknown routes and wrong methods too', async (t) => {
  const b = backend()
  const admin = await serveAdmin({ host: '127.0.0.1', port: 0, token: 'admin-token-1', logger: silentLogger }, b)
  t.after(() => admin.close())
  for (const [path, method] of [['/nope', 'GET'], ['/offline', 'DELETE'], ['/status', 'GET'], ['/offline', 'POST']] as const) {
    const res = await request(`${admin.url}${path}`, { method })
    assert.equal(res.statusCode, 401, `${method} ${path}`)
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="lameduck"')
    assert.deepEqual(Object.keys(await res.body.json() as object).sort(), ['error', 'message'])
  }
  const known = await request(`${admin.url}/nope`, { headers: { authorization: 'Bearer admin-token-1' } })
  assert.equal(known.statusCode, 404, 'with the token, the route table answers')
  await known.body.dump()
  assert.deepEqual(b.calls, [])
})

test('a backend that throws answers 500 naming the error, logs it, and the listener keeps serving', async (t) => {
  const logger = memoryLogger()
  const admin = await serveAdmin({ host: '127.0.0.1', port: 0, token: undefined, logger }, backend({ status: async () => { throw new Error('status exploded') } }))
  t.after(() => admin.close())
  const res = await request(`${admin.url}/status`)
  assert.equal(res.statusCode, 500)
  assert.deepEqual(await res.body.json(), { error: 'internal error', message: 'status exploded' })
  assert.ok(logger.lines.some((l) => l.level === 'error' && /GET \/status failed: status exploded/.test(l.msg)))
  const next = await request(`${admin.url}/offline`, { method: 'POST' })
  assert.equal(next.statusCode, 202, 'still serving')
  await next.body.dump()
})

test('close() ends a waiting /offline?wait=true and the listener at once', async () => {
  let arrived!: () => void
  const inHandler = new Promise<void>((resolve) => { arrived = resolve })
  const admin = await serveAdmin({ host: '127.0.0.1', port: 0, token: undefined, logger: silentLogger }, backend({
    offline: async () => { arrived(); return await new Promise<AdminAnswer>(() => {}) } // a drain that outlasts the process
  }))
  const outcome = request(`${admin.url}/offline?wait=true`, { method: 'POST' }).then(() => 'answered', (err: Error & { code?: string }) => err.code ?? err.message)
  await inHandler
  await admin.close()
  assert.equal(await outcome, 'UND_ERR_SOCKET', 'the waiting caller sees its connection close')
  await assert.rejects(request(`${admin.url}/status`), { code: 'ECONNREFUSED' })
})

test('the engine brings no web framework into the app: its dependencies are lameduck packages and the OpenTelemetry API only', () => {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> }
  // @opentelemetry/api is the no-op API every instrumented library depends on; the SDK stays the app's choice.
  assert.deepEqual(Object.keys(manifest.dependencies).filter((d) => !d.startsWith('@lameduck/')), ['@opentelemetry/api'])
  const src = new URL('../src/', import.meta.url)
  for (const file of readdirSync(src)) {
    assert.doesNotMatch(readFileSync(new URL(file, src), 'utf8'), /from '(fastify|express|koa|@nestjs\/[a-z-]+)'/, file)
  }
})
