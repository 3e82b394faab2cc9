// The unmodified `nacos` npm client against the local server: register, beat,
// subscribe, UDP push + ack, deregister; and the SDK's requests match the set
// captured from nacos-naming 2.6.3 against a stub.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startNacos, type RequestEvent, type BeatEvent } from '../src/nacos/index.ts'
import { fixture, register, sdkClient, waitFor } from './nacos-helpers.ts'

test('the nacos SDK registers, beats, subscribes, receives pushes and deregisters; its requests match the captured set', async (t) => {
  // cacheMillis is long so that only a UDP push can bring changes within this test.
  const server = await startNacos({ cacheMillis: 60_000, pushDelayMs: 200, clientBeatIntervalMs: 250 })
  const requests: RequestEvent[] = []
  const beats: Array<BeatEvent & { at: number }> = []
  server.events.on('request', (r) => requests.push(r))
  server.events.on('beat', (b) => beats.push({ ...b, at: Date.now() }))
  const client = await sdkClient(server)
  t.after(async () => { await client.close(); await server.close() })

  const instance = { ip: '10.0.0.5', port: 8080, weight: 2, metadata: { version: '1.2.3' } }
  await client.registerInstance('orders', instance)
  const [stored] = server.instances('orders')
  assert.ok(stored)
  assert.deepEqual({ ip: stored.ip, port: stored.port, weight: stored.weight, clusterName: stored.clusterName, healthy: stored.healthy, enabled: stored.enabled, ephemeral: stored.ephemeral, metadata: stored.metadata },
    { ip: '10.0.0.5', port: 8080, weight: 2, clusterName: 'DEFAULT', healthy: true, enabled: true, ephemeral: true, metadata: { version: '1.2.3' } })

  // Subscribe (clusters 'DEFAULT') and read getAllInstances (clusters ''): two cache keys, both answered.
  let seen: any[] = []
  client.subscribe('orders', (hosts: any[]) => { seen = hosts })
  await waitFor('the first list', () => seen.length === 1)
  assert.equal((await client.getAllInstances('orders')).length, 1)
  assert.equal(await client.getServerStatus(), 'UP')
  // The SDK polls once more 1 s after subscribing; after that, only a push can bring news quickly.
  await waitFor('the SDK\'s first scheduled poll', () => requests.filter((r) => r.path.endsWith('/list') && r.query.clusters === 'DEFAULT').length >= 2, 3_000)

  // A second instance registered elsewhere reaches the subscriber by UDP push, and the SDK acks it.
  const acks: number[] = []
  server.events.on('push-ack', (p) => acks.push(p.lastRefTime))
  const listPolls = (): number => requests.filter((r) => r.path.endsWith('/list') && r.query.clusters === 'DEFAULT').length
  const pollsBefore = listPolls()
  const registeredAt = Date.now()
  await register(server, 'orders', 9090)
  await waitFor('a push with two hosts', () => seen.length === 2, 3_000)
  const pushMs = Date.now() - registeredAt
  assert.ok(pushMs >= 150, `push arrived after ${pushMs} ms, not before the 200 ms push delay`)
  assert.equal(listPolls(), pollsBefore, 'no poll in between: the push brought it')
  await waitFor('the SDK to ack the push', () => acks.length >= 1)
  assert.equal(server.stats().pushes.failed, 0)

  // The SDK's first beat comes ~10 s after the client was created, then every clientBeatInterval.
  await waitFor('two beats from the SDK', () => beats.filter((b) => b.port === 8080).length >= 2, 14_000)
  const own = beats.filter((b) => b.port === 8080)
  assert.equal(own[0]!.code, 10200)
  assert.equal(own[0]!.light, false)
  // The SDK's own default is 5 s: a second beat sooner is the clientBeatInterval the server answered (250 ms).
  assert.ok(own[1]!.at - own[0]!.at < 5_000, `the next beat follows the clientBeatInterval the server answered (${own[1]!.at - own[0]!.at} ms)`)

  await client.deregisterInstance('orders', instance)
  assert.deepEqual(server.instances('orders').map((i) => i.port), [9090])
  await waitFor('the deregistration pushed to the subscriber', () => seen.length === 1 && seen[0].port === 9090, 3_000)

  // Every request the SDK made has the captured shape: method, path, query keys and values, headers.
  const captured = fixture('captured-nacos-naming-2.6.3-requests.json').requests as Array<{ method: string, path: string, query: Record<string, string>, headers: Record<string, string> }>
  const variable = new Set(['udpPort', 'clientIP', 'beat'])
  for (const want of captured) {
    const match = requests.find((r) => r.method === want.method && r.path === want.path &&
      Object.keys(want.query).sort().join() === Object.keys(r.query).sort().join() &&
      (want.query.clusters === undefined || r.query.clusters === want.query.clusters) &&
      Object.entries(want.query).every(([k, v]) => variable.has(k) || r.query[k] === v))
    assert.ok(match, `no request like ${want.method} ${want.path} ${JSON.stringify(want.query)}`)
    for (const h of ['user-agent', 'client-version', 'request-module', 'accept-encoding']) assert.equal(match.headers[h], want.headers[h], `${want.method} ${want.path} header ${h}`)
    assert.match(String(match.headers.requestid), /^[0-9a-f-]{36}$/)
    if (want.path.endsWith('/beat')) {
      assert.deepEqual(Object.keys(JSON.parse(match.query.beat!)).sort(), Object.keys(JSON.parse(want.query.beat!)).sort())
    }
    if (want.query.udpPort !== undefined && want.query.clusters !== undefined) {
      assert.ok(Number(match.query.udpPort) > 0, 'subscribed lists carry the push receiver port')
    }
  }
})
