// The server's wire shapes against the fixtures: list answers, beat answers,
// UDP push packets and acks.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import dgram from 'node:dgram'
import { once } from 'node:events'
import { startNacos } from '../src/nacos/index.ts'
import { fixture, JAVA_AGENT, nacosHttp, register, udpSubscriber, waitFor } from './nacos-helpers.ts'

const keys = (o: object): string[] => Object.keys(o).sort()

test('list answers have the 2.x ServiceInfo shape of the Nacos docs, with name and clusters echoed', async (t) => {
  const server = await startNacos()
  t.after(() => server.close())
  await register(server, 'nacos.test.1', 8888, { metadata: '{"k1":"v1"}' })

  const docs = fixture('nacos-docs-v1-instance-list-response.json')
  const { json } = await nacosHttp(server, 'GET', '/instance/list', { serviceName: 'DEFAULT_GROUP@@nacos.test.1', clusters: '', healthyOnly: false })
  assert.deepEqual(keys(json), keys(docs))
  assert.deepEqual(keys(json.hosts[0]), keys(docs.hosts[0]))
  for (const field of ['name', 'groupName', 'clusters', 'cacheMillis', 'checksum', 'allIPs', 'reachProtectionThreshold', 'valid']) {
    assert.equal(json[field], docs[field], field)
  }
  assert.equal(json.hosts[0].instanceId, '127.0.0.1#8888#DEFAULT#DEFAULT_GROUP@@nacos.test.1')
  assert.deepEqual(json.hosts[0].metadata, { k1: 'v1' })
  for (const field of ['instanceHeartBeatInterval', 'instanceHeartBeatTimeOut', 'ipDeleteTimeout', 'instanceIdGenerator', 'serviceName', 'clusterName']) {
    assert.equal(json.hosts[0][field], docs.hosts[0][field], field)
  }
  const failover = fixture('nacos-docs-failover-serviceinfo-2x.json')
  assert.deepEqual(keys(json.hosts[0]).filter((k) => k !== 'instanceIdGenerator'), keys(failover.hosts[0]))

  // An unknown service answers the empty shape.
  const empty = await nacosHttp(server, 'GET', '/instance/list', { serviceName: 'orders', clusters: '' })
  const emptyFixture = fixture('constructed-instance-list-empty-2x.json')
  assert.deepEqual(keys(empty.json), keys(emptyFixture))
  assert.deepEqual({ ...empty.json, lastRefTime: 0 }, { ...emptyFixture, lastRefTime: 0 })

  // `name` is the grouped name whichever way the group came; `clusters` is echoed verbatim.
  for (const [params, name] of [[{ serviceName: 'nacos.test.1' }, 'DEFAULT_GROUP@@nacos.test.1'], [{ serviceName: 'x', groupName: 'G' }, 'G@@x'], [{ serviceName: 'G@@x', groupName: 'ignored' }, 'G@@x']] as const) {
    for (const clusters of ['', 'DEFAULT', 'DEFAULT,other']) {
      const { json: info } = await nacosHttp(server, 'GET', '/instance/list', { ...params, clusters })
      assert.equal(info.name, name)
      assert.equal(info.clusters, clusters)
    }
  }
})

test('beat answers are JSON like InstanceController.beat, 10200 or 20404', async (t) => {
  const server = await startNacos({ clientBeatIntervalMs: 5_000 })
  t.after(() => server.close())
  await register(server, 'orders', 8080)
  const ok = await nacosHttp(server, 'PUT', '/instance/beat', { serviceName: 'DEFAULT_GROUP@@orders', beat: JSON.stringify({ serviceName: 'DEFAULT_GROUP@@orders', ip: '127.0.0.1', port: 8080, cluster: 'DEFAULT', weight: 1, metadata: {}, scheduled: true }) })
  assert.deepEqual(ok.json, fixture('constructed-beat-response-ok.json'))
  assert.deepEqual(keys(ok.json), keys(fixture('constructed-beat-response-ok.json')))
  // A light beat (no body) for an unknown instance cannot be compensated.
  const missing = await nacosHttp(server, 'PUT', '/instance/beat', { serviceName: 'DEFAULT_GROUP@@orders', ip: '127.0.0.1', port: 9999 })
  assert.deepEqual(missing.json, fixture('constructed-beat-response-resource-not-found.json'))
})

test('push packets have the 2.x shape, gzip from 1 KiB, and fixture-style acks are matched', async (t) => {
  const server = await startNacos({ pushDelayMs: 20, pushAckTimeoutMs: 2_000 })
  const sub = await udpSubscriber(true)
  t.after(async () => { await sub.close(); await server.close() })
  const acked: number[] = []
  server.events.on('push-ack', (p) => acked.push(p.lastRefTime))

  await nacosHttp(server, 'GET', '/instance/list', { serviceName: 'DEFAULT_GROUP@@orders', clusters: 'DEFAULT', udpPort: sub.port, clientIP: '127.0.0.1' })
  await register(server, 'orders', 8080, { metadata: '{"version":"1.2.3"}' })
  await waitFor('a push', () => sub.packets.length === 1)

  const want = fixture('constructed-udp-push-dom-2x.json')
  const { packet, gzip } = sub.packets[0]!
  assert.equal(gzip, false)
  assert.deepEqual(keys(packet), keys(want))
  assert.equal(packet.type, 'dom')
  assert.ok(Number.isSafeInteger(packet.lastRefTime), 'lastRefTime stays below 2^53 so the SDK echoes it exactly')
  const data = JSON.parse(packet.data)
  const wantData = JSON.parse(want.data)
  assert.deepEqual(keys(data), keys(wantData))
  assert.deepEqual(keys(data.hosts[0]), keys(wantData.hosts[0]))
  assert.equal(data.name, 'DEFAULT_GROUP@@orders')
  assert.equal(data.clusters, 'DEFAULT', 'the subscriber\'s clusters are echoed')
  await waitFor('the ack to be matched', () => acked.includes(packet.lastRefTime))

  // Large service infos are gzip-compressed, as UdpPushService does.
  await register(server, 'orders', 8081, { metadata: JSON.stringify({ blob: 'x'.repeat(2_000) }) })
  await waitFor('a gzip push', () => sub.packets.length === 2)
  assert.equal(sub.packets[1]!.gzip, true)
  assert.equal(JSON.parse(sub.packets[1]!.packet.data).hosts.length, 2)

  // The ack format the Node SDK sends (transcribed from its own test) is understood.
  const sdkAcks = fixture('nodejs-sdk-test-udp-push-packets-1x.json')
  const ackShape = JSON.parse(sdkAcks.expectedAckForDom)
  assert.deepEqual(keys(ackShape), ['data', 'lastRefTime', 'type'])
  await waitFor('both acks', () => server.stats().pushes.acked === 2)
})

test('a push to an address that never acks is resent once, then given up', async (t) => {
  const server = await startNacos({ pushDelayMs: 10, pushAckTimeoutMs: 150, pushRetries: 1 })
  const sub = await udpSubscriber(false)
  t.after(async () => { await sub.close(); await server.close() })
  const failed: number[] = []
  server.events.on('push-failed', (p) => failed.push(p.attempt))
  await nacosHttp(server, 'GET', '/instance/list', { serviceName: 'orders', udpPort: sub.port, clientIP: '127.0.0.1' })
  await register(server, 'orders', 8080)
  await waitFor('the push to be given up', () => failed.length === 1, 2_000)
  assert.equal(sub.packets.length, 2)
  assert.equal(sub.packets[0]!.packet.lastRefTime, sub.packets[1]!.packet.lastRefTime, 'the resend is the same packet')
  assert.deepEqual(failed, [2])
  assert.deepEqual(server.stats().pushes, { sent: 2, acked: 0, resent: 1, failed: 1 })
})

test('only push-capable agents subscribe; pushes go to clientIP, or to the HTTP peer with pushTo: peer', async (t) => {
  const sub = await udpSubscriber(true)
  const viaClientIp = await startNacos({ pushDelayMs: 10, pushAckTimeoutMs: 100, pushRetries: 0 })
  const viaPeer = await startNacos({ pushDelayMs: 10, pushTo: 'peer' })
  t.after(async () => { await sub.close(); await viaClientIp.close(); await viaPeer.close() })

  // A browser-like agent gets answers but no subscription.
  await nacosHttp(viaPeer, 'GET', '/instance/list', { serviceName: 'orders', udpPort: sub.port }, { headers: { 'user-agent': 'curl/8' } })
  assert.equal(viaPeer.subscribers().length, 0)
  // Client-Version is read first, as Nacos does.
  await nacosHttp(viaPeer, 'GET', '/instance/list', { serviceName: 'orders', udpPort: sub.port, clientIP: '127.0.0.2' }, { headers: { 'user-agent': 'curl/8', 'client-version': JAVA_AGENT } })
  assert.equal(viaPeer.subscribers()[0]?.address, '127.0.0.1', 'pushTo: peer ignores clientIP')

  // 127.0.0.2 is loopback but not where the subscriber listens: like a clientIP the server cannot reach.
  await nacosHttp(viaClientIp, 'GET', '/instance/list', { serviceName: 'orders', udpPort: sub.port, clientIP: '127.0.0.2' })
  assert.equal(viaClientIp.subscribers()[0]?.address, '127.0.0.2')
  const lost: unknown[] = []
  viaClientIp.events.on('push-failed', (p) => lost.push(p))
  await register(viaClientIp, 'orders', 8080)
  await register(viaPeer, 'orders', 8080)
  await waitFor('the unreachable push to be given up', () => lost.length === 1, 2_000)
  await waitFor('the peer push', () => sub.packets.length === 1)
  assert.equal(sub.packets.length, 1)
})

test('subscribers that stop listing expire; changes within the push delay are merged into one push', async (t) => {
  // A push delay a loaded machine's three concurrent registrations cannot outlast; the TTL outlives it.
  const server = await startNacos({ pushDelayMs: 1_500, subscriberTtlMs: 2_500 })
  const sub = await udpSubscriber(true)
  t.after(async () => { await sub.close(); await server.close() })
  const gone: unknown[] = []
  server.events.on('unsubscribe', (s) => gone.push(s))
  await nacosHttp(server, 'GET', '/instance/list', { serviceName: 'orders', udpPort: sub.port, clientIP: '127.0.0.1' })
  await Promise.all([register(server, 'orders', 8080), register(server, 'orders', 8081), register(server, 'orders', 8082)])
  await waitFor('one merged push', () => sub.packets.length === 1)
  assert.equal(JSON.parse(sub.packets[0]!.packet.data).hosts.length, 3)
  await waitFor('the subscriber to expire', () => server.subscribers().length === 0, 15_000)
  assert.equal(gone.length, 1)
  await register(server, 'orders', 8083)
  // Absence of a push: wait out the push delay with room to spare.
  await new Promise((resolve) => setTimeout(resolve, server.options.pushDelayMs + 150))
  assert.equal(sub.packets.length, 1, 'an expired subscriber gets no more pushes')
})

test('the server\'s UDP socket is the source of pushes and accepts acks from any address', async (t) => {
  const server = await startNacos({ pushDelayMs: 10 })
  t.after(() => server.close())
  const socket = dgram.createSocket('udp4')
  socket.bind(0, '127.0.0.1')
  await once(socket, 'listening')
  t.after(() => new Promise<void>((resolve) => socket.close(() => resolve())))
  const from: number[] = []
  socket.on('message', (msg, rinfo) => {
    from.push(rinfo.port)
    socket.send(JSON.stringify({ type: 'push-ack', lastRefTime: JSON.parse(msg.toString()).lastRefTime, data: '' }), rinfo.port, rinfo.address)
  })
  await nacosHttp(server, 'GET', '/instance/list', { serviceName: 'orders', udpPort: socket.address().port, clientIP: '127.0.0.1' })
  await register(server, 'orders', 8080)
  await waitFor('an ack', () => server.stats().pushes.acked === 1)
  assert.deepEqual(from, [server.udpPort])
})
