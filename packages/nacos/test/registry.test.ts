import { test } from 'node:test'
import assert from 'node:assert/strict'
import { InvalidOptionError, RegistryError, virtualClock } from '@lameduck/core'
import { startNacos, type BeatEvent } from '@lameduck/devkit'
import { nacosRegistry, nacosDiscovery, type NacosRegistryOptions } from '@lameduck/nacos'
import { until } from '@lameduck/test-utils'
import { captureLogger, instance } from './helpers.ts'

test('registers an ephemeral instance with its metadata, weight, group, cluster and namespace; deregisters; registers again', async (t) => {
  const server = await startNacos()
  const registry = nacosRegistry({ serverList: server.serverList, namespace: 'dev', group: 'G1', cluster: 'c-1' })
  t.after(async () => { await registry.close(); await server.close() })

  const orders = instance(3000, { weight: 50, metadata: { version: '1.2.3' } })
  await registry.register(orders)
  assert.equal(server.instances('orders').length, 0, 'not in the default namespace/group')
  const [held] = server.instances('orders', { namespaceId: 'dev', groupName: 'G1' })
  assert.ok(held)
  assert.deepEqual(
    { ip: held.ip, port: held.port, weight: held.weight, clusterName: held.clusterName, ephemeral: held.ephemeral, enabled: held.enabled, healthy: held.healthy },
    { ip: '127.0.0.1', port: 3000, weight: 50, clusterName: 'c-1', ephemeral: true, enabled: true, healthy: true })
  assert.deepEqual(held.metadata, orders.metadata)
  assert.equal(held.metadata['lameduck.registeredAt'], '1700000000000')
  assert.equal(held.metadata['lameduck.weight'], '50')

  await registry.deregister(orders)
  assert.equal(server.instances('orders', { namespaceId: 'dev', groupName: 'G1' }).length, 0, 'deregistered explicitly')
  await registry.register(orders)
  assert.equal(server.instances('orders', { namespaceId: 'dev', groupName: 'G1' }).length, 1, 'registered again to go online')
})

test('status, weight 0 and nacosWeight map onto Nacos enabled/healthy/weight', async (t) => {
  const server = await startNacos()
  const registry = nacosRegistry({ serverList: server.serverList, nacosWeight: (w) => w / 100 })
  t.after(async () => { await registry.close(); await server.close() })
  await registry.register(instance(3000, { weight: 100 }))
  await registry.register(instance(3001, { weight: 50, status: 'OUT_OF_SERVICE' }))
  await registry.register(instance(3002, { weight: 0 }))
  const byPort = new Map(server.instances('orders').map((i) => [i.port, i]))
  assert.equal(byPort.get(3000)!.weight, 1, 'lameduck weight 100 → Nacos weight 1')
  assert.deepEqual([byPort.get(3001)!.weight, byPort.get(3001)!.enabled], [0.5, false])
  // The SDK would send weight 0 as 1; the adapter disables the instance instead.
  assert.equal(byPort.get(3002)!.enabled, false)
  assert.deepEqual(server.serviceInfo('orders').hosts.map((h) => h.port), [3000])

  const bad = nacosRegistry({ serverList: server.serverList, nacosWeight: () => 20_000 })
  t.after(() => bad.close())
  await assert.rejects(bad.register(instance(3003)), (err: unknown) => err instanceof InvalidOptionError && err.option === 'nacosWeight')
})

test('beats come from the adapter on its clock: first one after beatIntervalMs, then at the server\'s interval, none after deregister', async (t) => {
  // Virtual time drives the beat timers; each beat itself is a real HTTP call to the stand-in.
  const clock = virtualClock()
  const server = await startNacos({ clientBeatIntervalMs: 150 })
  const registry = nacosRegistry({ serverList: server.serverList, beatIntervalMs: 200, clock })
  t.after(async () => { await registry.close(); await server.close() })
  const beats: Array<BeatEvent & { at: number }> = []
  server.events.on('beat', (b) => beats.push({ ...b, at: clock.now() }))
  const orders = instance(3000, { metadata: { version: '1' } })
  const registeredAt = clock.now()
  await registry.register(orders)
  // The next beat is due once the previous one has been answered and its timer set.
  const nextBeat = async (dueInMs: number): Promise<void> => {
    const before = beats.length
    await until(() => clock.pending === 1, 'the next beat timer')
    await clock.advance(dueInMs - 1)
    assert.equal(beats.length, before, `no beat before ${dueInMs} ms`)
    await clock.advance(1)
    await until(() => beats.length === before + 1, 'the beat to reach the server')
  }
  await nextBeat(200)
  assert.equal(beats[0]!.at - registeredAt, 200, 'first beat after beatIntervalMs (the SDK\'s own loop waits ~10 s)')
  assert.deepEqual({ ...beats[0]!, at: 0 }, { namespaceId: 'public', service: 'DEFAULT_GROUP@@orders', ip: '127.0.0.1', port: 3000, clusterName: 'DEFAULT', code: 10200, outcome: 'ok', light: false, at: 0 })
  await nextBeat(150)
  await nextBeat(150)
  assert.deepEqual(beats.map((b) => b.at - registeredAt), [200, 350, 500], 'later beats follow the server\'s clientBeatInterval (150 ms)')
  const described = registry.describe().registered as Array<{ beats: { beats: number, intervalMs: number, lastBeatAt: number } }>
  assert.equal(described[0]!.beats.intervalMs, 150)
  assert.equal(described[0]!.beats.lastBeatAt, registeredAt + 500, 'lastBeatAt is on the injected clock')

  await until(() => clock.pending === 1, 'the next beat timer')
  await registry.deregister(orders)
  assert.equal(clock.pending, 0, 'deregister cancels the beat timer')
  const count = beats.length
  await clock.advance(10_000)
  assert.equal(beats.length, count, 'no beat after deregistration (it would re-register the instance on a real server)')
  assert.equal(server.instances('orders').length, 0)
})

test('close() deregisters what is still registered, then refuses work', async (t) => {
  const server = await startNacos()
  t.after(() => server.close())
  const registry = nacosRegistry({ serverList: server.serverList })
  await registry.register(instance(3000))
  await registry.register(instance(3001))
  await registry.close()
  assert.equal(server.instances('orders').length, 0)
  await assert.rejects(registry.register(instance(3000)), (err: unknown) => err instanceof RegistryError && err.operation === 'register')
  assert.deepEqual(registry.instances('orders'), [])
  await registry.close()
})

test('registry failures are RegistryErrors with the cause; the SDK\'s logs go to the logger', async (t) => {
  const server = await startNacos()
  const logger = captureLogger()
  const registry = nacosRegistry({ serverList: server.serverList, logger })
  t.after(() => registry.close())
  await registry.register(instance(3000))
  assert.ok(logger.entries.some((e) => e.level === 'debug' && /^nacos sdk: \[NameProxy\]\[REGISTER-SERVICE\] public registering service: DEFAULT_GROUP@@orders/.test(e.msg)),
    'SDK info lines arrive formatted, at debug')
  assert.ok(logger.entries.some((e) => e.level === 'info' && e.msg === 'nacos: registered 127.0.0.1:3000 in DEFAULT_GROUP@@orders'))

  await server.close()
  const err = await registry.register(instance(3001)).then(() => null, (e: unknown) => e)
  assert.ok(err instanceof RegistryError, String(err))
  assert.equal(err.operation, 'register')
  assert.match(err.message, /127\.0\.0\.1:3001 in DEFAULT_GROUP@@orders/)
  assert.ok(err.cause instanceof Error)
  assert.ok(logger.entries.some((e) => e.level === 'warn' && /^nacos sdk: connect ECONNREFUSED/.test(e.msg) && e.obj.err instanceof Error), 'SDK warnings keep their level and their error')
  assert.equal((registry.describe().lastError as { operation: string }).operation, 'register')
})

test('options are validated once, with errors that name the option and the fix', () => {
  const cases: Array<[unknown, string]> = [
    [{}, 'serverList'],
    [{ serverList: '' }, 'serverList'],
    [{ serverList: 'http://127.0.0.1:8848' }, 'serverList'],
    [{ serverList: '127.0.0.1:99999' }, 'serverList'],
    [{ serverList: ['127.0.0.1:8848', 5] }, 'serverList'],
    [{ serverList: '127.0.0.1', namespace: '' }, 'namespace'],
    [{ serverList: '127.0.0.1', group: 'A@@B' }, 'group'],
    [{ serverList: '127.0.0.1', cluster: 'a_b' }, 'cluster'],
    [{ serverList: '127.0.0.1', clusters: [] }, 'clusters'],
    [{ serverList: '127.0.0.1', clusters: ['ok', 'no way'] }, 'clusters[1]'],
    [{ serverList: '127.0.0.1', beatIntervalMs: 0 }, 'beatIntervalMs'],
    [{ serverList: '127.0.0.1', readyTimeoutMs: '5s' }, 'readyTimeoutMs'],
    [{ serverList: '127.0.0.1', client: 'x' }, 'client'],
    [{ serverList: '127.0.0.1', client: { serverList: 'x' } }, 'client.serverList'],
    [{ serverList: '127.0.0.1', client: { namespace: 'x' } }, 'client.namespace'],
    [{ serverList: '127.0.0.1', logger: console.log }, 'logger'],
    [{ serverList: '127.0.0.1', nacosWeight: -1 }, 'nacosWeight'],
    [{ serverList: '127.0.0.1', severList: 'x' }, 'severList']
  ]
  for (const [options, option] of cases) {
    assert.throws(() => nacosRegistry(options as NacosRegistryOptions), (err: unknown) => err instanceof InvalidOptionError && err.option === option, `${JSON.stringify(options)} → ${option}`)
  }
  assert.throws(() => nacosDiscovery(null as unknown as NacosRegistryOptions), InvalidOptionError)
  // Valid forms: several servers, default port, endpoint mode.
  nacosRegistry({ serverList: ['10.0.0.1:8848', '10.0.0.2'] })
  nacosRegistry({ client: { endpoint: 'acm.example:8080' } })
})

test('describe() reports the adapter, its workarounds, registrations and discovery state', async (t) => {
  const server = await startNacos()
  const registry = nacosRegistry({ serverList: server.serverList })
  t.after(async () => { await registry.close(); await server.close() })
  assert.equal(registry.describe().sdk, null, 'the client is created on first use')
  await registry.register(instance(3000))
  await registry.load('orders')
  const d = registry.describe()
  assert.equal(d.type, 'nacos')
  assert.deepEqual(d.sdk, { ownBeats: true, observing: true, pushes: { accepted: 0, refused: 0, dumps: 0, lastRefusedFrom: null } })
  assert.equal(d.push, true)
  assert.equal((d.registered as unknown[]).length, 1)
  assert.equal(((d.discovery as { services: Record<string, { instances: number }> }).services.orders!).instances, 1)
  assert.equal(JSON.parse(JSON.stringify(d)).type, 'nacos', 'JSON-friendly')
})
