// The SDK's UDP push receiver applies any datagram from anyone. The adapter accepts pushes only
// from the configured servers' addresses, never answers `dump`, and can turn push off.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createSocket, type Socket } from 'node:dgram'
import { once } from 'node:events'
import type { Instance } from '@lameduck/core'
import { startNacos } from '@lameduck/devkit'
import { nacosDiscovery, nacosRegistry } from '@lameduck/nacos'
import { pushSources } from '../src/push-guard.ts'
import { captureLogger, instance, waitFor } from './helpers.ts'

/** A UDP socket on another loopback address: Linux routes all of 127/8 to lo, so 127.0.0.2 binds without setup. */
async function forger (address: string): Promise<Socket & { replies: string[] }> {
  const socket = Object.assign(createSocket('udp4'), { replies: [] as string[] })
  socket.on('message', (msg) => socket.replies.push(msg.toString('utf8')))
  socket.bind(0, address)
  await once(socket, 'listening')
  return socket
}

function domPacket (service: string, hosts: Array<{ ip: string, port: number }>): string {
  const data = { name: `DEFAULT_GROUP@@${service}`, clusters: 'DEFAULT', cacheMillis: 10_000, lastRefTime: 1, hosts: hosts.map((h) => ({ ...h, weight: 1, healthy: true, enabled: true })) }
  return JSON.stringify({ type: 'dom', data: JSON.stringify(data), lastRefTime: 1 })
}

function udpPortOf (discovery: { describe: () => Record<string, unknown> }): number {
  return (discovery.describe().discovery as { udpPort: number }).udpPort
}

test('a forged push from another address (127.0.0.2) is dropped: the list stays the server\'s, later pushes still apply', async (t) => {
  const server = await startNacos({ pushDelayMs: 20 })
  const provider = nacosRegistry({ serverList: server.serverList, beatIntervalMs: 1_000 })
  const logger = captureLogger()
  const consumer = nacosDiscovery({ serverList: server.serverList, logger })
  const evil = await forger('127.0.0.2')
  t.after(async () => { evil.close(); await provider.close(); await consumer.close(); await server.close() })

  await provider.register(instance(3001))
  const lists: Instance[][] = []
  consumer.subscribe('orders', (list) => lists.push(list))
  assert.deepEqual((await consumer.load('orders')).map((i) => i.port), [3001])

  // One datagram naming the watched service, as every poll's `udpPort=` tells anyone who sees it.
  evil.send(domPacket('orders', [{ ip: '127.0.0.1', port: 6666 }]), udpPortOf(consumer), '127.0.0.1')
  // A real change after it: its push comes from the server (datagrams on lo keep their order per receiver).
  await provider.register(instance(3002))
  await waitFor('the real push with the second instance', () => lists.at(-1)?.length === 2, 5_000)
  assert.deepEqual(lists.flat().filter((i) => i.port === 6666), [], 'the forged list was never applied')
  assert.deepEqual(consumer.instances('orders').map((i) => i.port), [3001, 3002])
  const pushes = (consumer.describe().sdk as { pushes: { refused: number, accepted: number, lastRefusedFrom: string } }).pushes
  assert.equal(pushes.refused, 1)
  assert.match(pushes.lastRefusedFrom, /^127\.0\.0\.2:/)
  assert.ok(pushes.accepted >= 1, 'the server\'s own pushes pass')
  assert.deepEqual(evil.replies, [], 'no push-ack tells the forger the port is live')
  assert.ok(logger.entries.some((e) => e.level === 'warn' && /dropped a UDP push from 127\.0\.0\.2/.test(e.msg)))
})

test('a `dump` request is never answered, even from a server address; a push after it is', async (t) => {
  const server = await startNacos({ pushDelayMs: 20 })
  const consumer = nacosDiscovery({ serverList: server.serverList })
  // The server is on this host, so this host's addresses may push: 127.0.0.1 counts as the server.
  const local = await forger('127.0.0.1')
  t.after(async () => { local.close(); await consumer.close(); await server.close() })
  await consumer.load('orders')
  const port = udpPortOf(consumer)
  local.send(JSON.stringify({ type: 'dump', lastRefTime: 7 }), port, '127.0.0.1')
  local.send(domPacket('elsewhere', [{ ip: '127.0.0.1', port: 1 }]), port, '127.0.0.1')
  await waitFor('the push-ack of the push sent after the dump', () => local.replies.length > 0)
  assert.deepEqual(local.replies.map((r) => (JSON.parse(r) as { type: string }).type), ['push-ack'], 'no dump-ack (with or without the service map) came first')
  assert.equal((consumer.describe().sdk as { pushes: { dumps: number } }).pushes.dumps, 1)
})

test('push: false — no UDP subscriber on the server, no receiver, changes arrive by polling', async (t) => {
  const server = await startNacos({ cacheMillis: 300, pushDelayMs: 20 })
  const provider = nacosRegistry({ serverList: server.serverList, beatIntervalMs: 1_000 })
  const consumer = nacosDiscovery({ serverList: server.serverList, push: false })
  t.after(async () => { await provider.close(); await consumer.close(); await server.close() })
  await provider.register(instance(3001))
  assert.deepEqual((await consumer.load('orders')).map((i) => i.port), [3001])
  await provider.register(instance(3002))
  await waitFor('the change by poll', () => consumer.instances('orders').length === 2, 5_000)
  assert.deepEqual(server.subscribers(), [], 'every poll said udpPort=0')
  const d = consumer.describe()
  assert.equal(d.push, false)
  assert.equal((d.discovery as { udpPort: number }).udpPort, 0)
  assert.equal((d.discovery as { updates: { pushes: number } }).updates.pushes, 0)
  assert.throws(() => nacosDiscovery({ serverList: server.serverList, push: 'no' as unknown as boolean }), /push.*true or false/)
})

test('push sources: a remote server\'s resolved addresses; a local server adds this host\'s own addresses, never the rest of 127/8', async () => {
  const remote = await pushSources(['10.1.2.3:8848', '[fd00::5]:8848'])
  assert.ok(remote.has('10.1.2.3') && remote.has('::ffff:10.1.2.3') && remote.has('fd00::5'))
  assert.ok(!remote.has('127.0.0.1'), 'a remote server does not make this host a push source')
  const local = await pushSources(['127.0.0.1:8848'])
  assert.ok(local.has('127.0.0.1'))
  assert.ok(!local.has('127.0.0.2'))
  const named = await pushSources(['localhost:8848'])
  assert.ok(named.has('127.0.0.1') || named.has('::1'), 'names are resolved')
})

test('address-server mode: the servers the endpoint names later are push sources as soon as they push', async (t) => {
  // The stand-in answers GET /nacos/serverlist with itself: it is its own address server.
  const server = await startNacos({ pushDelayMs: 20 })
  const provider = nacosRegistry({ serverList: server.serverList, beatIntervalMs: 1_000 })
  const consumer = nacosDiscovery({ client: { endpoint: server.serverList } })
  t.after(async () => { await provider.close(); await consumer.close(); await server.close() })
  await provider.register(instance(3001))
  assert.deepEqual((await consumer.load('orders')).map((i) => i.port), [3001])
  await provider.register(instance(3002))
  // By push, long before the 10 s poll.
  await waitFor('the pushed change', () => consumer.instances('orders').length === 2, 5_000)
  const pushes = (consumer.describe().sdk as { pushes: { refused: number, accepted: number } }).pushes
  assert.deepEqual([pushes.refused, pushes.accepted > 0], [0, true])
})
