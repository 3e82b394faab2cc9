// Alone in its file: it counts the process's open server handles, which other tests' servers would blur.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import Fastify from 'fastify'
import lameduck from '@lameduck/fastify'

test('a second registration leaks nothing: no admin listener, no signal handler, no open handle left after close', async () => {
  const servers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap').length
  const counts = () => ({ SIGTERM: process.listenerCount('SIGTERM'), SIGINT: process.listenerCount('SIGINT'), servers: servers() })
  const before = counts()
  const app = Fastify()
  await app.register(lameduck, { service: 'x', admin: { port: 0 } })
  const once = counts()
  assert.deepEqual(once, { SIGTERM: before.SIGTERM + 1, SIGINT: before.SIGINT + 1, servers: before.servers + 1 }, 'one registration: its handlers and its admin listener')
  await assert.rejects(async () => { await app.register(lameduck, { service: 'x', admin: { port: 0 } }) }, /already registered on this app; register it once/)
  assert.deepEqual(counts(), once, 'the failed second registration started nothing')
  await app.close()
  // A closed server handle leaves the active list on a later turn of the event loop.
  for (let i = 0; i < 300 && counts().servers !== before.servers; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  assert.deepEqual(counts(), before, 'and close() leaves nothing behind')
})
