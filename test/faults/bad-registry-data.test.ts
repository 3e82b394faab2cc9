// Bad input from the registries, end to end under load: a Eureka or Nacos that
// starts answering garbage (not JSON, no host list, hosts with wrong-typed
// fields), and instances with bad warmup metadata. Consumers report it, keep
// their last good list, lose no request, and never crash or route by a silently
// wrong weight.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { request } from 'undici'
import { memoryRegistry, type Discovery } from '@lameduck/core'
import { createBalancer } from '@lameduck/balancer'
import { startEureka, startNacos } from '@lameduck/devkit'
import { eurekaDiscovery, eurekaRegistry } from '@lameduck/eureka'
import { nacosDiscovery, nacosRegistry } from '@lameduck/nacos'
import { faultProxy, memoryLog, steadyLoad, until, type Fault } from './helpers.ts'
import { startProvider } from '../helpers.ts'

function loadThrough (balancer: ReturnType<typeof createBalancer>) {
  return steadyLoad(async () => {
    const res = await request('http://orders/work', { dispatcher: balancer })
    await res.body.dump()
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
    return String(res.headers['x-instance'])
  }, 5)
}

/** Serves each garbage answer in turn for a while, checking the load keeps flowing and the failure is logged. */
async function throughGarbage (opts: { proxy: { fault: (req: import('node:http').IncomingMessage) => Fault }, listPath: RegExp, bodies: string[], load: ReturnType<typeof loadThrough>, fetched: () => number }) {
  for (const body of opts.bodies) {
    opts.proxy.fault = (req) => opts.listPath.test(req.url ?? '') ? { status: 200, body, type: 'application/json' } : 'pass'
    const fetchedBefore = opts.fetched()
    const okBefore = opts.load.stats.ok
    await until(() => opts.fetched() >= fetchedBefore + 3, `three fetches of ${JSON.stringify(body).slice(0, 60)}`)
    await until(() => opts.load.stats.ok >= okBefore + 30, 'requests keep flowing')
  }
  opts.proxy.fault = () => 'pass'
}

test('Eureka answers garbage: the consumer reports it, keeps its last good list, loses nothing', async (t) => {
  const server = await startEureka({ responseCacheUpdateIntervalMs: 50 })
  const a = await startProvider('a', { registry: eurekaRegistry({ url: server.url, client: { eureka: { heartbeatInterval: 200 } } }) })
  const b = await startProvider('b', { registry: eurekaRegistry({ url: server.url, client: { eureka: { heartbeatInterval: 200 } } }) })
  // Hooks run in the order they are added: providers before their registry.
  t.after(async () => { await Promise.all([a.app.close(), b.app.close()]); await server.close() })
  const proxy = await faultProxy(`http://127.0.0.1:${server.port}`)
  t.after(() => proxy.close())
  const log = memoryLog()
  const discovery = eurekaDiscovery({ url: `${proxy.url}/eureka`, logger: log.logger, client: { eureka: { registryFetchInterval: 50, maxRetries: 0 } } })
  const balancer = createBalancer({ service: 'orders', discovery, refreshIntervalMs: 50, logger: log.logger })
  t.after(async () => { await balancer.close(); await discovery.close() })
  await until(() => balancer.stats().services[0]!.available === 2, 'both instances')
  const load = loadThrough(balancer)
  t.after(() => load.stop())
  const fetches = (): number => proxy.seen.filter((s) => s.url.startsWith('/eureka/apps')).length

  await throughGarbage({
    proxy,
    listPath: /^\/eureka\/apps\/?$/,
    load,
    fetched: fetches,
    bodies: [
      '<html>502 Bad Gateway</html>',
      '{"applications":',
      'null',
      '{"applications":{}}',
      '{"applications":{"application":"ORDERS"}}',
      '{"applications":{"application":[{"name":"ORDERS","instance":[null]}]}}'
    ]
  })
  assert.equal(load.stats.failed, 0, load.stats.errors.slice(0, 3).join(', '))
  assert.ok(log.find(/eureka: registry fetch failed .* the last fetched list stays in use/, 40).length >= 1, 'reported at warn')
  assert.ok(discovery.describe().lastError !== null || log.find(/registry fetches succeed again/).length > 0)
  await until(() => log.find(/registry fetches succeed again/).length >= 1, 'recovery logged')
  await until(() => balancer.stats().services[0]!.available === 2, 'both instances after the garbage')
  await load.stop()
  assert.equal(load.stats.failed, 0)
  assert.ok(load.stats.byInstance.get('a')! > 50 && load.stats.byInstance.get('b')! > 50)
})

test('Nacos answers garbage: the consumer reports it, keeps its last good list, drops only the bad hosts, loses nothing', async (t) => {
  const server = await startNacos({ push: false, cacheMillis: 100 })
  const providerRegistry = () => nacosRegistry({ serverList: server.serverList, beatIntervalMs: 200 })
  const a = await startProvider('a', { registry: providerRegistry() })
  const b = await startProvider('b', { registry: providerRegistry() })
  t.after(async () => { await Promise.all([a.app.close(), b.app.close()]); await server.close() })
  const proxy = await faultProxy(`http://127.0.0.1:${server.port}`)
  t.after(() => proxy.close())
  const log = memoryLog()
  const discovery = nacosDiscovery({ serverList: `127.0.0.1:${proxy.port}`, logger: log.logger })
  const balancer = createBalancer({ service: 'orders', discovery, refreshIntervalMs: 50, logger: log.logger })
  t.after(async () => { await balancer.close(); await discovery.close() })
  await until(() => balancer.stats().services[0]!.available === 2, 'both instances')
  const load = loadThrough(balancer)
  t.after(() => load.stop())
  const listPath = /^\/nacos\/v1\/ns\/instance\/list/
  const fetches = (): number => proxy.seen.filter((s) => listPath.test(s.url)).length
  // What the SDK asks for: the DEFAULT cluster.
  const good = server.serviceInfo('orders', { clusters: 'DEFAULT' })
  const info = (hosts: unknown) => JSON.stringify({ ...good, hosts, lastRefTime: Date.now() })

  await throughGarbage({
    proxy,
    listPath,
    load,
    fetched: fetches,
    bodies: ['<html>502</html>', '{"hosts":', 'null', info(null), JSON.stringify({ ...good, hosts: 'all of them' })]
  })
  assert.equal(load.stats.failed, 0, load.stats.errors.slice(0, 3).join(', '))
  assert.ok(log.find(/nacos sdk: /, 40).length >= 1, 'the SDK\'s parse failures are reported at warn')

  // Hosts with wrong-typed fields next to good ones: the bad ones are dropped (and said), the good ones kept.
  const junk = [null, 'host', { ip: 12345, port: 8080 }, { ip: '10.9.9.9', port: 'http' }, { ip: '', port: 1 }, { ip: '10.9.9.9', port: 70_000 }]
  proxy.fault = (req) => listPath.test(req.url ?? '') ? { status: 200, body: info([...good.hosts, ...junk]), type: 'application/json' } : 'pass'
  await until(() => log.find(/nacos: ignoring 6 host\(s\) of orders without a usable ip and port/, 40).length >= 1, 'the dropped hosts reported')
  const ok = load.stats.ok
  await until(() => load.stats.ok >= ok + 50, 'requests keep flowing')
  assert.deepEqual(discovery.instances('orders').map((i) => i.host), ['127.0.0.1', '127.0.0.1'])
  proxy.fault = () => 'pass'
  await load.stop()
  assert.equal(load.stats.failed, 0, load.stats.errors.slice(0, 3).join(', '))
})

test('bad discovery data: warmup=abc and a negative weight get safe defaults and a warning; an instance without a usable address is skipped', async (t) => {
  const upstream = (id: string) => new Promise<{ port: number, close: () => Promise<void> }>((resolve) => {
    const server = createServer((_req, res) => { res.setHeader('x-instance', id); res.end(id) })
    server.listen(0, '127.0.0.1', () => resolve({ port: (server.address() as AddressInfo).port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }))
  })
  const good = await upstream('good')
  const odd = await upstream('odd')
  t.after(() => Promise.all([good.close(), odd.close()]))
  // A Eureka whose registry holds one normal instance, one with bad warmup metadata, one with a numeric hostName.
  const instance = (id: string, host: unknown, port: number, metadata: Record<string, string>) => ({ instanceId: id, app: 'ORDERS', hostName: host, ipAddr: host, status: 'UP', port: { $: port, '@enabled': 'true' }, vipAddress: 'orders', metadata })
  const body = JSON.stringify({
    applications: {
      versions__delta: '1',
      apps__hashcode: 'UP_3_',
      application: [{
        name: 'ORDERS',
        instance: [
          instance('good', '127.0.0.1', good.port, { 'lameduck.weight': '100' }),
          instance('odd', '127.0.0.1', odd.port, { 'lameduck.warmup': 'abc', 'lameduck.weight': '-5', weight: 'heavy', 'lameduck.registeredAt': 'yesterday' }),
          instance('numeric-host', 2130706433, odd.port, {})
        ]
      }]
    }
  })
  const eureka = await faultProxy(null)
  eureka.fault = (req) => /^\/eureka\/apps\/?$/.test(req.url ?? '') ? { status: 200, body, type: 'application/json' } : { status: 404 }
  t.after(() => eureka.close())
  const log = memoryLog()
  const discovery = eurekaDiscovery({ url: `${eureka.url}/eureka`, logger: log.logger, client: { eureka: { registryFetchInterval: 100 } } })
  const balancer = createBalancer({ service: 'orders', discovery, refreshIntervalMs: 50, logger: log.logger })
  t.after(async () => { await balancer.close(); await discovery.close() })
  await until(() => balancer.stats().services[0]!.instances.length === 2, 'the two usable instances')
  const stats = balancer.stats().services[0]!.instances
  const oddStats = stats.find((i) => i.id === 'odd')!
  assert.equal(oddStats.weight, 100, 'the default weight, not -5 and not 0')
  assert.equal(oddStats.warmupMs, 0)
  assert.equal(oddStats.problems.length, 4, oddStats.problems.join('; '))
  const warned = log.find(/balancer: bad warmup metadata; using safe defaults/, 40)
  assert.equal(warned.length, 1)
  assert.deepEqual(warned[0]!.problems, oddStats.problems)
  assert.ok(!stats.some((i) => i.id === 'numeric-host'), 'the instance without a string host is not routed to')
  const counts = { good: 0, odd: 0 }
  for (let i = 0; i < 100; i++) {
    const res = await request('http://orders/', { dispatcher: balancer })
    counts[await res.body.text() as 'good' | 'odd']++
  }
  assert.deepEqual(counts, { good: 50, odd: 50 }, 'equal weights (100 each)')
})

test('a custom Discovery listing malformed instances: each skipped with one warning, the consumer keeps running', async (t) => {
  const registry = memoryRegistry()
  const a = await startProvider('a', { registry })
  t.after(() => a.app.close())
  let extra: unknown[] = []
  const discovery: Discovery = {
    instances: (service) => [...registry.instances(service), ...extra as never[]],
    subscribe: () => () => {}
  }
  const log = memoryLog()
  const balancer = createBalancer({ service: 'orders', discovery, refreshIntervalMs: 20, logger: log.logger })
  t.after(() => balancer.close())
  extra = [
    { id: 'n', service: 'orders', host: 2130706433, port: 80, status: 'UP', metadata: {} },
    { id: 'p', service: 'orders', host: '127.0.0.1', port: '8080', status: 'UP', metadata: {} },
    { id: 'q', service: 'orders', host: '', port: 8080, status: 'UP', metadata: {} },
    { id: 'r', service: 'orders', host: '127.0.0.1', port: 0, status: 'UP', metadata: {} }
  ]
  const skipped = (): unknown[] => log.find(/balancer: skipping an instance of 'orders' with an unusable address/, 40).map((w) => w.instance)
  await until(() => skipped().length === 4, 'the warnings')
  for (let i = 0; i < 10; i++) {
    const res = await request('http://orders/work', { dispatcher: balancer })
    assert.equal(res.statusCode, 200)
    await res.body.dump()
  }
  await until(() => balancer.stats().services[0]!.instances.length === 1, 'only a')
  assert.deepEqual(skipped(), ['n', 'p', 'q', 'r'], 'each warned once, not on every refresh')
})
