// How fast a deregistration reaches an unmodified nacos SDK subscriber: by UDP
// push within the push delay, or with push off by polling within cacheMillis.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startNacos } from '../src/nacos/index.ts'
import { deregister, register, sdkClient, waitFor } from './nacos-helpers.ts'

async function deregisterSeenAfter (server: Awaited<ReturnType<typeof startNacos>>): Promise<number> {
  const client = await sdkClient(server)
  let polls = 0
  server.events.on('request', (r) => { if (r.path.endsWith('/instance/list')) polls++ })
  try {
    await register(server, 'orders', 8080)
    await register(server, 'orders', 8081)
    let ports: number[] = []
    let changedAt = 0
    client.subscribe('orders', (hosts: Array<{ port: number }>) => { ports = hosts.map((h) => h.port).sort(); changedAt = Date.now() })
    await waitFor('both instances', () => ports.length === 2)
    // Let the subscription settle past the SDK's poll 1 s after subscribing.
    await waitFor('the SDK\'s first scheduled poll', () => polls >= 2, 3_000)
    const at = Date.now()
    await deregister(server, 'orders', 8081)
    await waitFor('the subscriber to drop 8081', () => ports.length === 1, server.options.cacheMillis + 3_000)
    assert.deepEqual(ports, [8080])
    return changedAt - at
  } finally {
    await client.close()
  }
}

test('push on: a deregistration reaches an SDK subscriber within the push delay', async (t) => {
  // The poll period is far away, so only the push can explain a fast update.
  const server = await startNacos({ pushDelayMs: 300, cacheMillis: 30_000 })
  t.after(() => server.close())
  const ms = await deregisterSeenAfter(server)
  t.diagnostic(`push on: deregister → SDK subscriber ${ms} ms (push delay 300 ms)`)
  assert.ok(ms >= 250, `not before the push delay (${ms} ms)`)
  assert.ok(ms < 30_000, `before the first poll could have seen it (${ms} ms, cacheMillis 30 000 ms)`)
  assert.ok(server.stats().pushes.sent >= 1, 'the server pushed')
  await waitFor('the SDK to ack the push', () => server.stats().pushes.acked >= 1)
})

test('push off: a deregistration reaches an SDK subscriber by polling within cacheMillis', async (t) => {
  const server = await startNacos({ push: false, cacheMillis: 1_500 })
  t.after(() => server.close())
  const ms = await deregisterSeenAfter(server)
  t.diagnostic(`push off: deregister → SDK subscriber ${ms} ms (cacheMillis 1500 ms)`)
  assert.equal(server.stats().pushes.sent, 0, 'nothing was pushed')
  assert.ok(server.subscribers().length >= 1, 'the client still subscribed: only the push is off')
})
