import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Instance } from '@lameduck/core'
import { startNacos, type RequestEvent } from '@lameduck/devkit'
import { nacosDiscovery, nacosRegistry } from '@lameduck/nacos'
import { captureLogger, instance, sdkClient, waitFor } from './helpers.ts'

test('consumers see instances as core Instances, are told of changes, and never see unhealthy or disabled ones', async (t) => {
  const server = await startNacos({ pushDelayMs: 50, clientBeatIntervalMs: 100, heartBeatTimeoutMs: 1_000, ipDeleteTimeoutMs: 60_000, checkIntervalMs: 50, protectThreshold: false })
  const provider = nacosRegistry({ serverList: server.serverList, beatIntervalMs: 100 })
  const consumer = nacosDiscovery({ serverList: server.serverList })
  t.after(async () => { await provider.close(); await consumer.close(); await server.close() })

  await provider.register(instance(3000, { weight: 40, metadata: { version: '2' } }))
  const lists: Instance[][] = []
  consumer.subscribe('orders', (list) => lists.push(list))
  const [first] = await consumer.load('orders')
  assert.deepEqual(first, {
    id: '127.0.0.1:3000',
    service: 'orders',
    host: '127.0.0.1',
    port: 3000,
    status: 'UP',
    metadata: instance(3000, { weight: 40, metadata: { version: '2' } }).metadata
  })
  assert.deepEqual(consumer.instances('ORDERS').map((i) => i.port), [3000], 'service names compare case-insensitively')

  await provider.register(instance(3001))
  await waitFor('the new instance', () => lists.at(-1)?.length === 2)
  // Registered OUT_OF_SERVICE: disabled in Nacos, never listed.
  await provider.register(instance(3002, { status: 'OUT_OF_SERVICE' }))
  // Registered behind the adapter's back and never beating: turns unhealthy and is filtered out.
  await fetch(`${server.url}/v1/ns/instance?serviceName=orders&ip=127.0.0.1&port=3003`, { method: 'POST' })
  await waitFor('3003 to show up', () => lists.at(-1)?.some((i) => i.port === 3003))
  await waitFor('3003 to be dropped as unhealthy', () => lists.at(-1)?.every((i) => i.port !== 3003), 4_000)
  assert.deepEqual(consumer.instances('orders').map((i) => i.port), [3000, 3001])
  const d = consumer.describe()
  assert.equal(d.role, 'discovery')
  assert.equal(d.registered, undefined)
})

test('deregistering the last instance: the adapter reports an empty list; the SDK alone keeps the instance forever', async (t) => {
  const server = await startNacos({ pushDelayMs: 50, cacheMillis: 500 })
  const provider = nacosRegistry({ serverList: server.serverList })
  const consumer = nacosDiscovery({ serverList: server.serverList })
  const sdk = await sdkClient(server.serverList)
  t.after(async () => { await provider.close(); await consumer.close(); await sdk.close(); await server.close() })

  const orders = instance(3000)
  await provider.register(orders)
  let sdkHosts: unknown[] = []
  sdk.subscribe('orders', (hosts: unknown[]) => { sdkHosts = hosts })
  const lists: Instance[][] = []
  consumer.subscribe('orders', (list) => lists.push(list))
  await waitFor('both to see the instance', () => sdkHosts.length === 1 && consumer.instances('orders').length === 1)
  assert.equal((await sdk.getAllInstances('orders')).length, 1)

  await provider.deregister(orders)
  await waitFor('the adapter to report the service empty', () => lists.at(-1)?.length === 0, 2_000)
  assert.deepEqual(consumer.instances('orders'), [])
  // Several polls (cacheMillis 500) later the SDK still holds the instance, in every API.
  const polls = (): number => (consumer.describe().discovery as { updates: { polls: number } }).updates.polls
  const pollsAtEmpty = polls()
  await waitFor('three more polls', () => polls() >= pollsAtEmpty + 3, 5_000)
  assert.equal(sdkHosts.length, 1, 'the SDK subscriber was never told')
  assert.equal((await sdk.getAllInstances('orders')).length, 1, 'getAllInstances still returns it')
  assert.equal((await sdk.getAllInstances('orders', 'DEFAULT_GROUP', '', false)).length, 1, 'even a direct query')
  assert.equal((await sdk.selectInstances('orders')).length, 1, 'selectInstances too')
  assert.equal(server.serviceInfo('orders').hosts.length, 0, 'while the server lists none')

  // The same instance coming back is seen again (the SDK would see "no change" against its stale cache).
  await provider.register(orders)
  await waitFor('the instance back', () => lists.at(-1)?.length === 1, 2_000)
})

test('one cache key and one poll loop per service (the SDK alone polls two: clusters \'\' and \'DEFAULT\')', async (t) => {
  const server = await startNacos({ cacheMillis: 200 })
  const consumer = nacosDiscovery({ serverList: server.serverList })
  const sdk = await sdkClient(server.serverList)
  t.after(async () => { await consumer.close(); await sdk.close(); await server.close() })
  const lists: RequestEvent[] = []
  // (The startup protocol check lists a probe service once: not a poll.)
  server.events.on('request', (r) => { if (r.path.endsWith('/instance/list') && r.query.serviceName !== 'lameduck-protocol-probe') lists.push(r) })

  await fetch(`${server.url}/v1/ns/instance?serviceName=orders&ip=127.0.0.1&port=3000`, { method: 'POST' })
  await consumer.load('orders')
  consumer.instances('orders')
  consumer.subscribe('orders', () => {})
  sdk.subscribe('orders', () => {})
  await sdk.getAllInstances('orders')
  await waitFor('a few poll rounds', () => lists.length >= 12, 3_000)

  const udpPort = String((consumer.describe().discovery as { udpPort: number }).udpPort)
  const keysOf = (mine: boolean): Array<string | undefined> => [...new Set(lists.filter((r) => (r.query.udpPort === udpPort) === mine).map((r) => r.query.clusters))].sort()
  assert.deepEqual(keysOf(true), ['DEFAULT'], 'the adapter asks with one cluster key')
  assert.deepEqual(keysOf(false), ['', 'DEFAULT'], 'the SDK alone keeps two')
})

test('clusters: consumers watch the clusters they name', async (t) => {
  const server = await startNacos({ pushDelayMs: 20 })
  const a = nacosRegistry({ serverList: server.serverList, cluster: 'a' })
  const b = nacosRegistry({ serverList: server.serverList, cluster: 'b' })
  const onlyA = nacosDiscovery({ serverList: server.serverList, clusters: ['a'] })
  const both = nacosDiscovery({ serverList: server.serverList, clusters: ['a', 'b'] })
  t.after(async () => { for (const c of [a, b, onlyA, both]) await c.close(); await server.close() })
  await a.register(instance(3000))
  await b.register(instance(3001))
  assert.deepEqual((await onlyA.load('orders')).map((i) => i.port), [3000])
  assert.deepEqual((await both.load('orders')).map((i) => i.port), [3000, 3001])
})

test('push not reaching the process: changes still arrive by polling within cacheMillis, and the adapter says why', async (t) => {
  // The list is refreshed by the push task (pushDelayMs + the 100 ms check) even with push off.
  const server = await startNacos({ push: false, cacheMillis: 400, pushDelayMs: 100 })
  const provider = nacosRegistry({ serverList: server.serverList })
  const logger = captureLogger()
  const consumer = nacosDiscovery({ serverList: server.serverList, logger })
  t.after(async () => { await provider.close(); await consumer.close(); await server.close() })

  await provider.register(instance(3000))
  await consumer.load('orders')
  // Past the SDK's 1 s first poll, so polls come every cacheMillis.
  await waitFor('the poll rhythm', () => ((consumer.describe().discovery as { updates: { polls: number } }).updates.polls >= 3), 3_000)
  const polls = (): number => (consumer.describe().discovery as { updates: { polls: number } }).updates.polls
  for (const port of [3001, 3002]) {
    const before = polls()
    await provider.register(instance(port))
    await waitFor(`instance ${port}`, () => consumer.instances('orders').some((i) => i.port === port), 5_000)
    // Counted in polls, not ms: the first poll after the server's snapshot caught up (the one in flight may predate it).
    assert.ok(polls() - before <= 2, `seen at poll ${polls() - before} after the registration`)
  }
  const updates = (consumer.describe().discovery as { updates: Record<string, number> }).updates
  assert.equal(updates.pushes, 0)
  assert.equal(updates.changesByPoll, 2)
  const warnings = logger.entries.filter((e) => e.level === 'warn' && /no UDP push has arrived/.test(e.msg))
  assert.equal(warnings.length, 1, 'warned once')
  assert.match(warnings[0]!.msg, /every 400 ms/)
})

test('a push that arrives, then one that is lost: the SDK discards its next poll (refreshOnly), the adapter does not', async (t) => {
  const server = await startNacos({ pushDelayMs: 50, cacheMillis: 1_500 })
  const provider = nacosRegistry({ serverList: server.serverList })
  const consumer = nacosDiscovery({ serverList: server.serverList })
  const sdk = await sdkClient(server.serverList)
  t.after(async () => { await provider.close(); await consumer.close(); await sdk.close(); await server.close() })
  let polls = 0
  server.events.on('request', (r) => { if (r.path.endsWith('/instance/list')) polls++ })

  await provider.register(instance(3000))
  let sdkPorts: number[] = []
  sdk.subscribe('orders', (hosts: Array<{ port: number }>) => { sdkPorts = hosts.map((h) => h.port).sort() })
  consumer.subscribe('orders', () => {})
  await waitFor('both to see 3000', () => sdkPorts.length === 1 && consumer.instances('orders').length === 1)
  await waitFor('both past the poll 1 s after subscribing', () => polls >= 4, 3_000)

  // This change is pushed: both update within the push delay.
  await provider.register(instance(3001))
  await waitFor('the push of 3001', () => sdkPorts.length === 2 && consumer.instances('orders').length === 2, 1_000)
  // From now on pushes are lost. The next change can only come by polling.
  server.setPush(false)
  await provider.register(instance(3002))
  const at = Date.now()
  const adapterUdpPort = String((consumer.describe().discovery as { udpPort: number }).udpPort)
  const pollsSince = { adapter: 0, sdk: 0 }
  server.events.on('request', (r) => { if (r.path.endsWith('/instance/list')) pollsSince[r.query.udpPort === adapterUdpPort ? 'adapter' : 'sdk']++ })
  await waitFor('the adapter to see 3002', () => consumer.instances('orders').length === 3, 3_000)
  const adapter = { ms: Date.now() - at, polls: pollsSince.adapter }
  await waitFor('the SDK to see 3002', () => sdkPorts.length === 3, 5_000)
  const alone = { ms: Date.now() - at, polls: pollsSince.sdk }
  t.diagnostic(`lost push after a delivered one: adapter ${adapter.ms} ms (poll #${adapter.polls}), SDK alone ${alone.ms} ms (poll #${alone.polls}); cacheMillis 1500`)
  assert.equal(adapter.polls, 1, 'the adapter took the first poll\'s answer')
  assert.equal(alone.polls, 2, 'the SDK threw the first poll\'s answer away (refreshOnly) and waited a period more')
})
