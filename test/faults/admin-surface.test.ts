// The admin listener as an attack surface: loopback by default, no token no
// public bind, tokens checked in constant time (every wrong one 401), bodies
// capped, unknown routes and methods refused, nothing on the app listener, and
// every action logged with the caller's address. Each refusal leaves the state alone.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { networkInterfaces } from 'node:os'
import { Readable } from 'node:stream'
import Fastify from 'fastify'
import { request } from 'undici'
import { memoryRegistry } from '@lameduck/core'
import lameduck from '@lameduck/fastify'
import { loggedProvider, memoryLog, waitState } from './helpers.ts'

const TOKEN = 's3cret-admin-token'
const publicIPv4 = Object.values(networkInterfaces()).flat().find((a) => a?.family === 'IPv4' && !a.internal)?.address

async function serving (options: Parameters<typeof loggedProvider>[1] = {}) {
  const registry = memoryRegistry()
  const p = await loggedProvider('a', { registry, windows: { clientFetchMs: 200 }, ...options })
  await waitState(p.app, 'serving')
  return { ...p, registry }
}

test('the admin listener binds loopback by default: not reachable on the machine\'s other addresses', { skip: publicIPv4 === undefined ? 'no non-loopback IPv4 here' : false }, async (t) => {
  const a = await serving()
  t.after(() => a.app.close())
  const { hostname, port } = new URL(a.admin)
  assert.equal(hostname, '127.0.0.1')
  await assert.rejects(request(`http://${publicIPv4}:${port}/status`), { code: 'ECONNREFUSED' })
  assert.equal((await request(`${a.admin}/status`)).statusCode, 200)
})

test('a non-loopback admin bind without a token refuses to start; with one it starts and requires it', async (t) => {
  for (const host of ['0.0.0.0', '::', ...(publicIPv4 === undefined ? [] : [publicIPv4])]) {
    const app = Fastify({ logger: false })
    await assert.rejects(async () => { await app.register(lameduck, { service: 'x', signals: false, admin: { host, port: 0 } }); await app.ready() },
      (err: Error & { code?: string }) => err.code === 'LAMEDUCK_ERR_INVALID_OPTION' && /^admin\.token: required when admin\.host is not loopback/.test(err.message), host)
    await app.close()
  }
  for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost']) {
    const app = Fastify({ logger: false })
    await app.register(lameduck, { service: 'x', signals: false, admin: { host, port: 0 } })
    await app.ready()
    await app.close()
  }
  if (publicIPv4 === undefined) return
  const log = memoryLog()
  const a = await loggedProvider('a', { registry: memoryRegistry(), admin: { host: publicIPv4, port: 0, token: TOKEN } }, log)
  t.after(() => a.app.close())
  await waitState(a.app, 'serving')
  assert.equal((await request(`${a.admin}/offline`, { method: 'POST' })).statusCode, 401)
  assert.equal(a.app.lameduck.state, 'serving')
  const ok = await request(`${a.admin}/status`, { headers: { authorization: `Bearer ${TOKEN}` } })
  assert.equal(ok.statusCode, 200)
  await ok.body.dump()
  assert.ok(log.lines.some((l) => l.caller === publicIPv4 && /rejected request with a missing or wrong token/.test(l.msg)), 'the refused caller\'s address is logged')
})

test('the token is compared in constant time, and wrong tokens of every length get 401 and change nothing', async (t) => {
  // The checker hashes both sides to equal lengths before timingSafeEqual: neither content nor length leaks.
  const auth = readFileSync(new URL('../../packages/node/src/auth.ts', import.meta.url), 'utf8')
  assert.match(auth, /timingSafeEqual\(/)
  assert.match(auth, /createHash\('sha256'\)/)
  assert.match(auth, /timingSafeEqual\(digest\(header\.slice\(start\)\), expected\)/)
  assert.doesNotMatch(auth, /token ?===|=== ?token|slice\(7\) ?===|=== ?expected/, 'no early-exit string comparison of the secret')

  const a = await serving({ admin: { port: 0, token: TOKEN } })
  t.after(() => a.app.close())
  const wrong: string[] = []
  for (let len = 0; len <= TOKEN.length * 2 + 1; len++) {
    wrong.push(`Bearer ${'x'.repeat(len)}`)
    wrong.push(`Bearer ${TOKEN.slice(0, len)}`) // every prefix, the empty one included
  }
  // (Trailing spaces are not in the list: HTTP strips them from header values before anyone sees them.)
  // The scheme is case-insensitive and may be followed by more than one space (RFC 9110 §11): those are right, not wrong.
  wrong.push(`Bearer ${TOKEN}x`, TOKEN, `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}`, `Bearer ${TOKEN.toUpperCase()}`, `Bearer ${TOKEN},${TOKEN}`)
  let rejected = 0
  for (const authorization of wrong) {
    if (authorization === `Bearer ${TOKEN}`) continue // the full-length prefix is the token itself
    for (const path of ['/offline', '/online', '/status', '/metrics']) {
      const res = await request(`${a.admin}${path}`, { method: path === '/status' || path === '/metrics' ? 'GET' : 'POST', headers: { authorization } })
      assert.equal(res.statusCode, 401, `${JSON.stringify(authorization)} on ${path}`)
      const body = await res.body.json() as Record<string, unknown>
      assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], 'a 401 tells nothing about the instance')
      rejected++
    }
  }
  assert.ok(rejected > 150)
  assert.equal(a.app.lameduck.state, 'serving')
  assert.equal(a.registry.registered('orders').length, 1)
  const ok = await request(`${a.admin}/offline`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } })
  assert.equal(ok.statusCode, 202)
  await ok.body.dump()
  assert.equal(a.app.lameduck.state, 'draining')
})

test('request bodies are capped: a large POST gets 413 (or 415 for an unknown type) and changes nothing', async (t) => {
  const a = await serving()
  t.after(() => a.app.close())
  const big = 'x'.repeat(64 * 1024)
  const cases: Array<{ name: string, path: string, headers: Record<string, string>, body: string | Readable, status: number }> = [
    { name: 'JSON', path: '/offline', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pad: big }), status: 413 },
    { name: 'text', path: '/offline', headers: { 'content-type': 'text/plain' }, body: big, status: 413 },
    { name: 'chunked, no length', path: '/offline', headers: { 'content-type': 'text/plain' }, body: Readable.from([big, big, big]), status: 413 },
    { name: 'just over 1 KiB', path: '/online', headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(1025), status: 413 },
    { name: 'binary', path: '/offline', headers: { 'content-type': 'application/octet-stream' }, body: big, status: 415 }
  ]
  for (const c of cases) {
    const res = await request(`${a.admin}${c.path}`, { method: 'POST', headers: c.headers, body: c.body })
    assert.equal(res.statusCode, c.status, c.name)
    await res.body.dump()
    assert.equal(a.app.lameduck.state, 'serving', `${c.name}: state unchanged`)
  }
  assert.equal(a.registry.registered('orders').length, 1)
  const small = await request(`${a.admin}/offline`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  assert.equal(small.statusCode, 202, 'a small body is fine')
  await small.body.dump()
})

test('unknown routes and methods are refused without a state change; no admin route on the app listener', async (t) => {
  const a = await serving()
  t.after(() => a.app.close())
  for (const path of ['/', '/nope', '/offline/', '/OFFLINE', '/Offline', '/admin/offline', '/status.json', '/offline/now', '/health/ready']) {
    for (const method of ['GET', 'POST'] as const) {
      const res = await request(`${a.admin}${path}`, { method })
      assert.equal(res.statusCode, 404, `${method} ${path} on the admin listener`)
      await res.body.dump()
    }
  }
  for (const path of ['/offline', '/online', '/status', '/metrics']) {
    // HEAD too: probes and link checkers send it, and it must not take the instance offline.
    for (const method of ['PUT', 'DELETE', 'PATCH', 'OPTIONS', ...(path === '/offline' || path === '/online' ? ['HEAD' as const] : [])]) {
      const res = await request(`${a.admin}${path}`, { method, ...(method === 'PUT' || method === 'PATCH' ? { body: '{}', headers: { 'content-type': 'application/json' } } : {}) })
      assert.ok(res.statusCode === 404 || res.statusCode === 405, `${method} ${path}: ${res.statusCode}`)
      await res.body.dump()
    }
    for (const method of ['GET', 'POST'] as const) {
      const res = await request(`${a.url}${path}`, { method })
      assert.equal(res.statusCode, 404, `${method} ${path} on the app listener`)
      await res.body.dump()
    }
  }
  assert.equal(a.app.lameduck.state, 'serving')
  assert.equal(a.registry.registered('orders').length, 1)
})

test('every admin action is logged with the caller\'s address', async (t) => {
  const a = await serving({ admin: { port: 0, token: TOKEN } })
  t.after(() => a.app.close())
  const auth = { authorization: `Bearer ${TOKEN}` }
  for (const [path, method, headers] of [['/offline', 'POST', auth], ['/online', 'GET', auth], ['/offline', 'GET', {}], ['/offline?wait=true', 'POST', auth]] as const) {
    const res = await request(`${a.admin}${path}`, { method, headers })
    await res.body.dump()
  }
  const actions = a.log.lines.filter((l) => l.action !== undefined || /rejected request/.test(l.msg))
  assert.deepEqual(actions.map((l) => [l.action ?? 'rejected', l.caller]), [
    ['offline', '127.0.0.1'], ['online', '127.0.0.1'], ['rejected', '127.0.0.1'], ['offline', '127.0.0.1']
  ])
  assert.ok(actions.every((l) => l.level >= 30), 'at info or above')
  assert.equal(a.app.lameduck.state, 'offline')
})
