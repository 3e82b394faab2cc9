// Failures eureka-js-client gives up on, and the races it loses.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createLifecycle, RegistryError } from '@lameduck/core'
import { startEureka, type EurekaServer } from '@lameduck/devkit'
import { eurekaRegistry } from '@lameduck/eureka'
import { gate } from '@lameduck/test-utils'
import { cb, DC, delayProxy, Eureka, HERE, instance, memoryLogger, quiet, sleep, until } from './helpers.ts'

const FAST = { eureka: { heartbeatInterval: 100, maxRetries: 0 } }

test('server down when the provider starts: the lifecycle keeps retrying and registers once the server is up', async () => {
  // Down: the address resets every connection until the server is up behind it.
  const down = await gate()
  const logger = memoryLogger()
  const registry = eurekaRegistry({ url: down.url('/eureka'), client: FAST, logger })
  const lifecycle = createLifecycle({ registry, registryBackoff: { initialMs: 50, maxMs: 200 } })
  const problems: string[] = []
  lifecycle.on('problem', (p) => problems.push(p.message))
  let server: EurekaServer | undefined
  try {
    const started = lifecycle.start({ id: 'orders-1', service: 'orders', host: '127.0.0.1', port: 3001 })
    await until(() => problems.length >= 3, 'three failed attempts', { timeoutMs: 5_000 })
    assert.equal(lifecycle.state, 'registering')
    assert.match(problems[0]!, /registry register failed: .*(ECONNRESET|socket hang up)/)
    assert.ok(down.refused >= 3, 'each attempt reached the address and was turned away')
    server = await startEureka({ useReadOnlyCache: false })
    down.open(server.port)
    await started
    assert.equal(lifecycle.state, 'serving')
    const held = server.snapshot()
    assert.equal(held.length, 1)
    assert.equal(held[0]!.metadata['lameduck.registeredAt'], String(lifecycle.registeredAt), 'registeredAt is the time registration succeeded')
    // Heartbeats run afterwards.
    await until(() => server!.requests().some((r) => r.method === 'PUT' && r.status === 200), 'a heartbeat', { timeoutMs: 2_000 })
  } finally {
    await lifecycle.shutdown('test')
    await lifecycle.stopped()
    await server?.close()
    await down.close()
  }
})

test('registry lost (server restarted): heartbeat 404 → re-registered with the same metadata', async () => {
  const first = await startEureka({ useReadOnlyCache: false })
  const port = first.port
  const logger = memoryLogger()
  const registry = eurekaRegistry({ url: first.url, client: FAST, logger, backoff: { initialMs: 20 } })
  const i = instance('orders-1', 3001, { 'lameduck.warmup': '60000' })
  let second: EurekaServer | undefined
  try {
    await registry.register(i)
    await first.close()
    // Down for a while: heartbeats fail and back off (reported once, not per attempt).
    await until(() => logger.lines.some((l) => /heartbeat for ORDERS\/orders-1 failed \(connect ECONNREFUSED/.test(l.msg)), 'a failed heartbeat', 2_000)
    await sleep(300)
    const warns = logger.lines.filter((l) => l.level === 'warn' && /heartbeat .* failed/.test(l.msg))
    assert.equal(warns.length, 1, 'first failure at warn, the repeats at debug')
    second = await startEureka({ port, useReadOnlyCache: false })
    await until(() => second!.snapshot().length === 1, 're-registration', { timeoutMs: 3_000 })
    assert.equal(second.snapshot()[0]!.metadata['lameduck.warmup'], '60000')
    assert.ok(second.requests().some((r) => r.method === 'PUT' && r.status === 404), 'learned it from a 404 heartbeat')
    // The server holds the instance a moment before the adapter has read its 204 and counted it.
    const reRegistrations = (): unknown => (registry.describe().instances as Array<Record<string, unknown>>)[0]!.reRegistrations
    await until(() => reRegistrations() === 1, 'the adapter to count the re-registration', { timeoutMs: 2_000 })
    assert.ok(logger.lines.some((l) => /re-registered ORDERS\/orders-1/.test(l.msg)))
  } finally {
    await registry.close()
    await second?.close()
  }
})

test('a register() that times out leaves nothing behind, even when the server answers late', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  let slow = true
  // POSTs reach the server 500 ms late; register() gives up after 400 ms.
  const proxy = await delayProxy(s.url, (method) => method === 'POST' && slow ? 500 : 0)
  const registry = eurekaRegistry({ url: proxy.url, client: FAST, registerTimeoutMs: 400 })
  const i = instance('o1', 3001)
  const deletes = (): number => s.requests().filter((r) => r.method === 'DELETE' && r.path === '/eureka/apps/ORDERS/o1').length
  try {
    await assert.rejects(registry.register(i), (err: unknown) => err instanceof RegistryError && /did not answer within 400 ms/.test(err.message))
    await until(() => deletes() === 1, 'the rollback DELETE once the late 204 arrived', { timeoutMs: 2_000 })
    assert.deepEqual(s.snapshot(), [])
    await sleep(300)
    assert.deepEqual(s.snapshot(), [], 'no heartbeat brought it back')

    // The caller retries at once, as the lifecycle does: it waits for the pending POST,
    // and the late answer to that POST is not undone.
    await assert.rejects(registry.register(i), /did not answer within 400 ms/)
    slow = false
    await registry.register(i)
    await sleep(300)
    assert.equal(s.snapshot().length, 1)
    assert.equal(deletes(), 1, 'no second rollback')
  } finally {
    await registry.close()
    await proxy.close()
    await s.close()
  }
})

test('a heartbeat in flight during offline: eureka-js-client resurrects the instance, the adapter does not', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  // Heartbeats reach the server 250 ms late, so one is in flight when offline starts, and lands after the DELETE.
  const proxy = await delayProxy(s.url, (method, path) => method === 'PUT' && !path.includes('/status') ? 250 : 0)
  const plain = new Eureka({
    cwd: HERE,
    logger: quiet,
    instance: { app: 'plain', instanceId: 'p1', hostName: '127.0.0.1', ipAddr: '127.0.0.1', port: { $: 3000, '@enabled': true }, vipAddress: 'plain', dataCenterInfo: DC },
    eureka: { serviceUrls: { default: [`${proxy.url}/apps/`] }, heartbeatInterval: 100, fetchRegistry: false, maxRetries: 0 }
  })
  const registry = eurekaRegistry({ url: proxy.url, client: FAST })
  const i = instance('a1', 3001)
  const held = (app: string): boolean => proxy.held.some((p) => p.startsWith(`PUT /eureka/apps/${app}/`))
  try {
    await cb((done) => plain.start(done))
    await registry.register(i)
    await until(() => held('plain') && held('ORDERS'), 'heartbeats of both in flight', { timeoutMs: 3_000, intervalMs: 2 })
    await Promise.all([cb((done) => plain.stop(done)), registry.deregister(i)])
    await sleep(600)
    const apps = s.snapshot().map((x) => x.app)
    assert.ok(apps.includes('PLAIN'), 'eureka-js-client: the late heartbeat got 404 and re-registered the stopped instance')
    assert.ok(!apps.includes('ORDERS'), 'the adapter waited for its heartbeat and ignored the answer: still gone')
  } finally {
    await fetch(`${s.url}/apps/PLAIN/p1`, { method: 'DELETE' })
    await registry.close()
    await proxy.close()
    await s.close()
  }
})
