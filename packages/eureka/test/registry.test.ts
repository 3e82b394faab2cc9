import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RegistryError, warmupMetadata } from '@lameduck/core'
import { startEureka } from '@lameduck/devkit'
import { eurekaRegistry } from '@lameduck/eureka'
import { deadPort } from '@lameduck/test-utils'
import { instance, memoryLogger, sleep, until } from './helpers.ts'

const FAST = { eureka: { heartbeatInterval: 100 } }

test('register maps the core instance onto Eureka and heartbeats; DELETE on deregister stops them', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  const logger = memoryLogger()
  const registry = eurekaRegistry({ url: s.url, client: { ...FAST, instance: { healthCheckUrl: 'http://127.0.0.1:3001/health/ready', metadata: { zone: 'a' } } }, logger, leaseDurationSecs: 5 })
  const md = warmupMetadata({ registeredAt: 1_700_000_000_000, warmupMs: 60_000, weight: 100 })
  const i = instance('orders-127.0.0.1-3001', 3001, md)
  try {
    await registry.register(i)
    const got = ((await (await fetch(`${s.url}/apps/ORDERS/${i.id}`, { headers: { accept: 'application/json' } })).json()) as { instance: Record<string, any> }).instance
    assert.equal(got.app, 'ORDERS')
    assert.equal(got.instanceId, i.id)
    assert.equal(got.hostName, '127.0.0.1')
    assert.equal(got.ipAddr, '127.0.0.1')
    assert.deepEqual(got.port, { $: 3001, '@enabled': 'true' })
    assert.equal(got.vipAddress, 'orders')
    assert.equal(got.status, 'UP')
    assert.deepEqual(got.dataCenterInfo, { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' })
    assert.deepEqual(got.metadata, { zone: 'a', ...md }, 'client.instance.metadata plus the lameduck/Dubbo warmup keys')
    assert.equal(got.healthCheckUrl, 'http://127.0.0.1:3001/health/ready', 'extra instance fields pass through')
    assert.equal(got.leaseInfo.durationInSecs, 5)

    const puts = (): number => s.requests().filter((r) => r.method === 'PUT' && r.path === `/eureka/apps/ORDERS/${i.id}`).length
    await until(() => puts() >= 3, 'three heartbeats', { timeoutMs: 2_000 })
    assert.equal(registry.describe().instances instanceof Array, true)

    await registry.deregister(i)
    assert.deepEqual(s.snapshot(), [])
    const after = puts()
    await sleep(350)
    assert.equal(puts(), after, 'no heartbeat after deregister')
    assert.ok(!s.requests().some((r) => r.method === 'POST' && r.at > Date.now() - 350), 'nothing re-registered it')
    assert.ok(logger.lines.some((l) => l.level === 'info' && /cancelled ORDERS\/orders-127\.0\.0\.1-3001/.test(l.msg)))
  } finally {
    await registry.close()
    await s.close()
  }
})

test('offlineMode out-of-service: override on offline, heartbeats keep the lease, online clears it with new metadata', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  const registry = eurekaRegistry({ url: s.url, offlineMode: 'out-of-service', client: FAST, leaseDurationSecs: 5 })
  const i = instance('o1', 3001, { 'lameduck.registeredAt': '1' })
  const onServer = () => s.snapshot().find((x) => x.id === 'o1')
  try {
    await registry.register(i)
    assert.equal(onServer()?.status, 'UP')
    await registry.deregister(i)
    assert.equal(onServer()?.status, 'OUT_OF_SERVICE')
    assert.equal(onServer()?.overriddenStatus, 'OUT_OF_SERVICE')
    const heartbeatsBefore = s.requests().filter((r) => r.method === 'PUT' && r.path === '/eureka/apps/ORDERS/o1').length
    await until(() => s.requests().filter((r) => r.method === 'PUT' && r.path === '/eureka/apps/ORDERS/o1').length >= heartbeatsBefore + 2, 'heartbeats while out of service', { timeoutMs: 2_000 })
    assert.equal(onServer()?.status, 'OUT_OF_SERVICE', 'heartbeats do not bring it back')

    // The server forgets it (operator DELETE): offline heartbeats must not re-register it.
    await fetch(`${s.url}/apps/ORDERS/o1`, { method: 'DELETE' })
    await until(() => s.requests().some((r) => r.method === 'PUT' && r.path === '/eureka/apps/ORDERS/o1' && r.status === 404), 'a 404 heartbeat', { timeoutMs: 2_000 })
    await sleep(300)
    assert.equal(onServer(), undefined, 'not re-registered while offline')

    // Online again: registers UP with the new registeredAt.
    await registry.register({ ...i, metadata: { 'lameduck.registeredAt': '2' } })
    assert.equal(onServer()?.status, 'UP')
    await registry.deregister(i)
    assert.equal(onServer()?.status, 'OUT_OF_SERVICE')
    // Online again while the lease is alive: POST keeps OUT_OF_SERVICE (override rule), then the override is removed.
    await registry.register({ ...i, metadata: { 'lameduck.registeredAt': '3' } })
    assert.equal(onServer()?.status, 'UP')
    assert.equal(onServer()?.overriddenStatus, 'UNKNOWN')
    assert.equal(onServer()?.metadata['lameduck.registeredAt'], '3')
    const override = s.requests().filter((r) => r.path.startsWith('/eureka/apps/ORDERS/o1/status')).map((r) => `${r.method} ${r.path.split('?')[1]} ${r.status}`)
    assert.deepEqual(override.slice(-2), ['PUT value=OUT_OF_SERVICE 200', 'DELETE value=UP 200'])
  } finally {
    await registry.close()
    assert.equal(onServer(), undefined, 'close() cancels a registration it still holds')
    await s.close()
  }
})

test('setStatus and updateMetadata go through the REST API', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  const registry = eurekaRegistry({ url: s.url, client: FAST })
  const i = instance('o1', 3001)
  try {
    await assert.rejects(registry.setStatus(i, 'OUT_OF_SERVICE'), /registry status failed: Eureka does not know ORDERS\/o1 \(404\): register it first/)
    await registry.register(i)
    await registry.setStatus(i, 'OUT_OF_SERVICE')
    assert.equal(s.snapshot()[0]?.status, 'OUT_OF_SERVICE')
    await registry.setStatus(i, 'UP')
    assert.equal(s.snapshot()[0]?.status, 'UP')
    await registry.updateMetadata(i, { 'lameduck.weight': '10' })
    assert.equal(s.snapshot()[0]?.metadata['lameduck.weight'], '10')
    // Kept for later registrations too (e.g. after a server restart).
    await fetch(`${s.url}/apps/ORDERS/o1`, { method: 'DELETE' })
    await until(() => s.snapshot()[0]?.metadata['lameduck.weight'] === '10', 're-registration with the new metadata', { timeoutMs: 2_000 })
  } finally {
    await registry.close()
    await s.close()
  }
})

test('the client does not read eureka-client.yml from the working directory unless client.cwd asks for it', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-eureka-yml-'))
  writeFileSync(join(dir, 'eureka-client.yml'), 'eureka: [this is: not: valid yaml\n')
  const cwd = process.cwd()
  process.chdir(dir)
  try {
    const registry = eurekaRegistry({ url: s.url, client: FAST })
    await registry.register(instance('o1', 3001))
    assert.equal(s.snapshot().length, 1, 'a stray YAML in cwd is ignored')
    await registry.close()
    const optIn = eurekaRegistry({ url: s.url, client: { ...FAST, cwd: dir } })
    await assert.rejects(optIn.register(instance('o2', 3002)), /Error loading YAML configuration file/)
    await optIn.close()
  } finally {
    process.chdir(cwd)
    await s.close()
  }
})

test('register rejects with a RegistryError naming the cause; deregister of an unknown instance succeeds', async () => {
  const s = await startEureka({ useReadOnlyCache: false, strict: true })
  const registry = eurekaRegistry({ url: s.url, client: { ...FAST, eureka: { ...FAST.eureka, maxRetries: 0 } } })
  try {
    await assert.rejects(registry.register(instance('bad id', 3001)), (err: unknown) => err instanceof RegistryError && /cannot be used in Eureka URLs/.test(err.message))
    await registry.deregister(instance('never-registered', 3001))
    const dead = await deadPort()
    const down = eurekaRegistry({ url: dead.url('/eureka'), client: { eureka: { maxRetries: 0 } } })
    await assert.rejects(down.register(instance('o1', 3001)), (err: unknown) => err instanceof RegistryError && err.operation === 'register' && /ECONNREFUSED/.test(err.message))
    await down.close()
    await dead.close()
    await registry.close()
    await assert.rejects(registry.register(instance('o1', 3001)), /registry is closed/)
  } finally {
    await s.close()
  }
})
