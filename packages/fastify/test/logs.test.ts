import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import Fastify, { type FastifyBaseLogger } from 'fastify'
import pino from 'pino'
import { request } from 'undici'
import { memoryRegistry } from '@lameduck/core'
import lameduck from '@lameduck/fastify'
import { until } from './helpers.ts'

test('every log line\'s `lameduck` field is an object: the app\'s, the engine\'s and the admin listener\'s', async (t) => {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({ write (chunk: Buffer, _e, done) { for (const l of String(chunk).split('\n')) if (l !== '') lines.push(JSON.parse(l)); done() } })
  const app = Fastify({ loggerInstance: pino({ level: 'debug' }, stream) as unknown as FastifyBaseLogger })
  await app.register(lameduck, { service: 'orders', host: '127.0.0.1', registry: memoryRegistry(), windows: { clientFetchMs: 100 }, warmupMs: 0, signals: false, admin: { port: 0, token: 's3cret-admin-token' } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  const auth = { authorization: 'Bearer s3cret-admin-token' }
  for (const [path, headers] of [['/offline?wait=true', auth], ['/online?wait=true', auth], ['/offline', {}], ['/offline?wait=maybe', auth], ['/nope', auth]] as const) {
    await (await request(`${app.lameduck.adminUrl!}${path}`, { method: 'POST', headers })).body.dump()
  }
  await app.close()
  const keyed = lines.filter((l) => 'lameduck' in l)
  assert.ok(keyed.some((l) => /admin: offline requested/.test(String(l.msg))), 'admin action lines are there')
  assert.ok(keyed.some((l) => /rejected request/.test(String(l.msg))), 'the rejected caller too')
  assert.ok(keyed.length >= 6, `${keyed.length} lines with the key`)
  for (const l of keyed) assert.ok(typeof l.lameduck === 'object' && l.lameduck !== null, `${String(l.msg)}: ${JSON.stringify(l.lameduck)}`)
})
