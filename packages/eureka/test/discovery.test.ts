import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Instance } from '@lameduck/core'
import { startEureka } from '@lameduck/devkit'
import { eurekaDiscovery, eurekaRegistry } from '@lameduck/eureka'
import { cb, DC, Eureka, HERE, instance, memoryLogger, quiet, until } from './helpers.ts'

const post = (url: string, id: string, port: number, over: Record<string, unknown> = {}): Promise<Response> =>
  fetch(`${url}/apps/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ instance: { instanceId: id, hostName: '127.0.0.1', app: 'orders', ipAddr: '127.0.0.1', port: { $: port, '@enabled': 'true' }, vipAddress: 'orders', dataCenterInfo: DC, ...over } })
  })

test('discovery returns UP instances as core Instances, case-insensitively, and subscribe emits changes', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  const discovery = eurekaDiscovery({ url: s.url, client: { eureka: { registryFetchInterval: 50 } } })
  try {
    assert.deepEqual(discovery.instances('orders'), [], 'empty before the first fetch')
    await discovery.ready()
    const changes: Instance[][] = []
    const unsubscribe = discovery.subscribe('Orders', (list) => changes.push(list))
    await post(s.url, 'b', 3002, { metadata: { 'lameduck.warmup': '1000' } })
    await post(s.url, 'a', 3001)
    await until(() => discovery.instances('ORDERS').length === 2, 'two instances', { timeoutMs: 2_000 })
    assert.deepEqual(discovery.instances('orders'), [
      { id: 'a', service: 'orders', host: '127.0.0.1', port: 3001, status: 'UP', metadata: {} },
      { id: 'b', service: 'orders', host: '127.0.0.1', port: 3002, status: 'UP', metadata: { 'lameduck.warmup': '1000' } }
    ], 'sorted by id; the empty-metadata placeholder is dropped')
    const copy = discovery.instances('orders')
    copy[0]!.metadata.x = 'mutated'
    assert.deepEqual(discovery.instances('orders')[0]!.metadata, {}, 'callers get copies')

    await fetch(`${s.url}/apps/orders/a/status?value=OUT_OF_SERVICE`, { method: 'PUT' })
    await until(() => discovery.instances('orders').length === 1, 'OUT_OF_SERVICE dropped', { timeoutMs: 2_000 })
    await fetch(`${s.url}/apps/orders/b`, { method: 'DELETE' })
    await until(() => discovery.instances('orders').length === 0, 'DELETE dropped', { timeoutMs: 2_000 })
    await until(() => changes.length >= 3, 'three change events', { timeoutMs: 2_000 })
    unsubscribe()
    assert.deepEqual(changes.map((l) => l.map((i) => i.id)).filter((ids, n, all) => n === 0 || ids.join() !== all[n - 1]!.join()).slice(-2), [['b'], []])
    assert.ok(changes.every((l) => l.every((i) => i.service === 'Orders')), 'the service name as subscribed')
    const fetches = discovery.describe().fetches as number
    assert.ok(fetches >= 3)
    await post(s.url, 'c', 3003)
    await discovery.refresh()
    assert.equal(discovery.instances('orders').length, 1, 'refresh() fetches now')
    assert.equal(changes.at(-1)!.length, 0, 'no events after unsubscribe')
  } finally {
    await discovery.close()
    await s.close()
  }
})

test('the registry adapter is also the Discovery (fetching starts on first use)', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  const registry = eurekaRegistry({ url: s.url, client: { eureka: { heartbeatInterval: 100, registryFetchInterval: 50 } } })
  try {
    await registry.register(instance('o1', 3001, { 'lameduck.registeredAt': '123' }))
    assert.equal((registry.describe().discovery as Record<string, unknown>).started, false, 'a pure provider never fetches')
    await registry.ready()
    assert.deepEqual(registry.instances('orders').map((i) => [i.id, i.metadata['lameduck.registeredAt']]), [['o1', '123']])
  } finally {
    await registry.close()
    await s.close()
  }
})

test('old-server responses (single objects, string ports, no instanceId) map to proper instances', async () => {
  for (const [file, expected] of [
    ['fargo-apps-sample-1-1.json', { 'testeng.metricsd': [['192.168.40.94:7101', 7101]] }],
    ['fargo-apps-sample-1-1-post-v122.json', { 'testeng.metricsd': [['192.168.40.94:7101', 7101]] }],
    ['fargo-apps-sample-1-2.json', { 'testeng.lsm': [['qa16gs.qa.somecompany.com:7100', 7100], ['qa22gs:7100', 7100]] }],
    ['fargo-apps-sample-2-2.json', { 'testeng.lsm': [['qa16gs.qa.somecompany.com:7100', 7100], ['qa22gs:7100', 7100]], 'testeng.metricsd': [['192.168.40.94:7101', 7101]] }]
  ] as const) {
    const payload = readFileSync(new URL(`./fixtures/${file}`, import.meta.url))
    const stub = createServer((req, res) => {
      res.writeHead(req.url === '/eureka/v2/apps/' ? 200 : 404, { 'content-type': 'application/json' })
      res.end(req.url === '/eureka/v2/apps/' ? payload : undefined)
    })
    await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve))
    const discovery = eurekaDiscovery({ url: `http://127.0.0.1:${(stub.address() as AddressInfo).port}/eureka/v2`, preferIpAddress: true })
    try {
      await discovery.ready()
      for (const [service, want] of Object.entries(expected)) {
        const got = discovery.instances(service)
        assert.deepEqual(got.map((i) => [i.id, i.port]), want, `${file}: ${service}`)
        for (const i of got) {
          assert.match(i.host, /^\d+\.\d+\.\d+\.\d+$/, 'preferIpAddress routes to ipAddr (these hostNames carry a port)')
          assert.equal(typeof i.metadata['base-uri'], 'string')
        }
      }
    } finally {
      await discovery.close()
      await new Promise((resolve) => stub.close(resolve))
    }
  }
})

test('a failing server: fetch errors are reported once, the last list stays, recovery is logged', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  const port = s.port
  const logger = memoryLogger()
  const discovery = eurekaDiscovery({ url: s.url, logger, client: { eureka: { registryFetchInterval: 30, maxRetries: 0 } } })
  let again: Awaited<ReturnType<typeof startEureka>> | undefined
  try {
    await post(s.url, 'a', 3001)
    await until(() => discovery.instances('orders').length === 1, 'a', { timeoutMs: 2_000 })
    await s.close()
    await until(() => (discovery.describe().lastError as string | null)?.includes('ECONNREFUSED'), 'a fetch error', { timeoutMs: 2_000 })
    await new Promise((resolve) => setTimeout(resolve, 200))
    assert.equal(discovery.instances('orders').length, 1, 'the last fetched list stays in use')
    assert.equal(logger.lines.filter((l) => l.level === 'warn' && /registry fetch failed/.test(l.msg)).length, 1)
    assert.ok(!logger.lines.some((l) => l.level === 'error'), 'the client\'s per-request errors are not logged as errors')
    again = await startEureka({ port, useReadOnlyCache: false })
    await until(() => discovery.instances('orders').length === 0, 'the new (empty) registry', { timeoutMs: 2_000 })
    assert.ok(logger.lines.some((l) => /fetches succeed again/.test(l.msg)))
  } finally {
    await discovery.close()
    await again?.close()
  }
})

test('client-cache traps: same host:port under two ids, and a body without "application"', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  const plain = new Eureka({ cwd: HERE, logger: quiet, eureka: { serviceUrls: { default: [s.serviceUrl] }, registerWithEureka: false } })
  const discovery = eurekaDiscovery({ url: s.url })
  try {
    // A restarted process re-registers under a new id before the old lease is gone: same address, two ids.
    await post(s.url, 'old-id', 3001)
    await post(s.url, 'new-id', 3001, { metadata: { 'lameduck.registeredAt': '2' } })
    await cb((done) => plain.fetchRegistry(done))
    await discovery.refresh()
    assert.equal(plain.getInstancesByAppId('orders').length, 1, 'eureka-js-client keeps one of them (keyed by hostName + port)')
    assert.deepEqual(discovery.instances('orders').map((i) => i.id), ['new-id', 'old-id'], 'the adapter keeps both, with their own metadata')
  } finally {
    await discovery.close()
    await s.close()
  }

  // An old server with an empty registry may leave "application" out; the client then keeps its stale cache.
  let bodyNow = JSON.stringify({ applications: { versions__delta: '1', apps__hashcode: 'UP_1_', application: [{ name: 'ORDERS', instance: [{ instanceId: 'a', hostName: '127.0.0.1', app: 'ORDERS', ipAddr: '127.0.0.1', status: 'UP', port: { $: 3001, '@enabled': 'true' }, vipAddress: 'orders', dataCenterInfo: DC }] }] } })
  const stub = createServer((_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(bodyNow) })
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(stub.address() as AddressInfo).port}/eureka`
  const stale = new Eureka({ cwd: HERE, logger: quiet, eureka: { serviceUrls: { default: [`${base}/apps/`] }, registerWithEureka: false } })
  const fresh = eurekaDiscovery({ url: base })
  try {
    await cb((done) => stale.fetchRegistry(done))
    await fresh.ready()
    assert.equal(fresh.instances('orders').length, 1)
    bodyNow = JSON.stringify({ applications: { versions__delta: '1', apps__hashcode: '' } })
    await cb((done) => stale.fetchRegistry(done))
    await fresh.refresh()
    assert.equal(stale.getInstancesByAppId('orders').length, 1, 'eureka-js-client still shows the instance')
    assert.deepEqual(fresh.instances('orders'), [], 'the adapter treats it as empty')
  } finally {
    await fresh.close()
    await new Promise((resolve) => stub.close(resolve))
  }
})
