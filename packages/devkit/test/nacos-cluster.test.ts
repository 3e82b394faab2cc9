// A two-node Nacos cluster: a change made on node A reaches node B after the distro sync
// delay (a fixed 1 s), then B's own push task refreshes B's list snapshot. A consumer
// whose SDK reads B keeps seeing a deregistered instance that long.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { InvalidOptionError, propagationWindow } from '@lameduck/core'
import { nacosWindows } from '@lameduck/nacos'
import { startNacosCluster, type NacosServer } from '../src/nacos/index.ts'
import { deregister, nacosHttp, register, sdkClient, waitFor } from './nacos-helpers.ts'

const PUSH_DELAY_MS = 50

async function listed (node: NacosServer, port: number): Promise<boolean> {
  const answer = await nacosHttp(node, 'GET', '/instance/list', { serviceName: 'orders' })
  return (answer.json.hosts as Array<{ port: number }>).some((h) => h.port === port)
}

test('a deregistration on node A reaches node B\'s list only after the distro sync delay; the window\'s cluster term covers it', async (t) => {
  const cluster = await startNacosCluster({ pushDelayMs: PUSH_DELAY_MS })
  t.after(() => cluster.close())
  const [a, b] = cluster.nodes as [NacosServer, NacosServer]
  await register(a, 'orders', 8080)
  await waitFor('B to learn the registration', () => listed(b, 8080), 5_000)

  const at = Date.now()
  await deregister(a, 'orders', 8080)
  await waitFor('A\'s list to drop it', async () => !(await listed(a, 8080)), 5_000)
  const onA = Date.now() - at
  assert.equal(await listed(b, 8080), true, `B still lists it after A dropped it (${onA} ms)`)
  await waitFor('B\'s list to drop it', async () => !(await listed(b, 8080)), 5_000)
  const onB = Date.now() - at
  assert.ok(onB >= 1_000 + PUSH_DELAY_MS, `B dropped it after ${onB} ms: the sync delay, then B's push task`)

  const single = nacosWindows({ pushDelayMs: PUSH_DELAY_MS })
  const clustered = nacosWindows({ pushDelayMs: PUSH_DELAY_MS, cluster: true })
  assert.ok(single.serverCacheMs < onB, 'one node\'s server term is short of what B shows (negative control)')
  // Server terms plus the window's own margin for request latency and timer jitter.
  assert.ok(onB <= clustered.serverCacheMs + clustered.replicationMs + clustered.marginMs, `B's lag ${onB} ms is inside the cluster window's server terms`)
})

test('the SDK with both nodes in serverList: a consumer that reads B sees the deregistration late; nothing loops back', async (t) => {
  const cluster = await startNacosCluster({ pushDelayMs: PUSH_DELAY_MS, push: false, cacheMillis: 300 })
  t.after(() => cluster.close())
  const [a, b] = cluster.nodes as [NacosServer, NacosServer]
  assert.equal(cluster.serverList, `${a.serverList},${b.serverList}`)
  const sdk = await sdkClient({ ...b, serverList: cluster.serverList })
  t.after(() => sdk.close())
  await register(a, 'orders', 8080)
  await register(b, 'orders', 8081)
  let ports: number[] = []
  sdk.subscribe('orders', (hosts: Array<{ port: number }>) => { ports = hosts.map((h) => h.port).sort() })
  await waitFor('the consumer to see both', () => ports.length === 2, 10_000)
  await deregister(a, 'orders', 8080)
  await waitFor('the consumer to drop 8080', () => ports.length === 1, 10_000)
  const window = propagationWindow(nacosWindows({ pushDelayMs: PUSH_DELAY_MS, cacheMillis: 300, cluster: true }))
  assert.ok(window.breakdown.some((p) => p.part === 'replicationMs'), 'the breakdown names the cluster term')
  assert.deepEqual(ports, [8081])
  // Both nodes converge and no change bounces between them.
  await waitFor('the sync to settle', () => cluster.pendingSync === 0, 5_000)
  assert.deepEqual([a.instances('orders').map((i) => i.port), b.instances('orders').map((i) => i.port)], [[8081], [8081]])
})

test('beats sent to the other node keep the owner from expiring the instance', async (t) => {
  const cluster = await startNacosCluster({ pushDelayMs: 0, distroSyncDelayMs: 20, heartBeatTimeoutMs: 300, ipDeleteTimeoutMs: 600, checkIntervalMs: 50 })
  t.after(() => cluster.close())
  const [a, b] = cluster.nodes as [NacosServer, NacosServer]
  await register(a, 'orders', 8080)
  await waitFor('B to hold a copy', () => b.instances('orders').length === 1)
  const beats = setInterval(() => { nacosHttp(b, 'PUT', '/instance/beat', { serviceName: 'DEFAULT_GROUP@@orders', ip: '127.0.0.1', port: 8080 }).catch(() => {}) }, 50)
  t.after(() => clearInterval(beats))
  await new Promise((resolve) => setTimeout(resolve, 900))
  assert.equal(a.instances('orders')[0]?.healthy, true, 'A, the owner, got the beats through B')
  clearInterval(beats)
  await waitFor('A to expire it, and B to follow', () => a.instances('orders').length === 0 && b.instances('orders').length === 0, 5_000)
})

test('cluster options are validated', async () => {
  await assert.rejects(startNacosCluster({ nodes: 1 }), (e: unknown) => e instanceof InvalidOptionError && e.option === 'nodes')
  await assert.rejects(startNacosCluster({ distroSyncDelayMs: -1 }), (e: unknown) => e instanceof InvalidOptionError && e.option === 'distroSyncDelayMs')
})
