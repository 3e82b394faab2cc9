// The unmodified npm eureka-js-client against the local server: if it cannot
// tell the difference, neither can the adapter built on it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEureka } from '@lameduck/devkit'
import { body, call, cb, fixture, jsClient, jsInstance, until } from './eureka-helpers.ts'

test('eureka-js-client registers, heartbeats, fetches and deregisters', async () => {
  const s = await startEureka({ responseCacheUpdateIntervalMs: 100 })
  const provider = jsClient({ serviceUrl: s.serviceUrl, instance: jsInstance('orders-1', 8080, { metadata: { version: '1.2.3' } }) })
  const consumer = jsClient({ serviceUrl: s.serviceUrl })
  try {
    let heartbeats = 0
    provider.on('heartbeat', () => heartbeats++)
    await cb((done) => provider.start(done))
    await cb((done) => consumer.start(done))
    const seen = await until(() => consumer.getInstancesByAppId('orders')[0], 'the consumer to see orders-1', { timeoutMs: 3_000 })
    assert.equal(seen.instanceId, 'orders-1')
    assert.equal(seen.port.$, 8080)
    assert.deepEqual(seen.metadata, { version: '1.2.3' })
    assert.equal(consumer.getInstancesByVipAddress('orders').length, 1)
    await until(() => heartbeats >= 2, 'two heartbeats', { timeoutMs: 3_000 })
    assert.ok(s.requests().some((r) => r.method === 'PUT' && r.path === '/eureka/apps/orders/orders-1' && r.status === 200))

    await cb((done) => provider.stop(done))
    assert.deepEqual(s.snapshot(), [], 'deregistered on the server at once')
    await until(() => consumer.getInstancesByAppId('orders').length === 0, 'the consumer to drop orders-1', { timeoutMs: 3_000 })
    assert.deepEqual(consumer.cache.app, {}, 'an empty registry clears the client cache (the server writes "application": [])')
  } finally {
    await cb((done) => consumer.stop(done))
    await s.close()
  }
})

test('two instances on one host stay two in the client (port objects, not numbers)', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  const a = jsClient({ serviceUrl: s.serviceUrl, instance: jsInstance('a', 8081) })
  const b = jsClient({ serviceUrl: s.serviceUrl, instance: jsInstance('b', 8082) })
  const consumer = jsClient({ serviceUrl: s.serviceUrl, shouldUseDelta: true })
  try {
    await cb((done) => a.start(done))
    await cb((done) => b.start(done))
    await cb((done) => consumer.fetchRegistry(done))
    assert.deepEqual(consumer.getInstancesByAppId('ORDERS').map((i: any) => i.instanceId).sort(), ['a', 'b'])
    // Delta bodies parse too (ADDED/MODIFIED/DELETED with actionType).
    await call('PUT', `${s.url}/apps/orders/b/status?value=OUT_OF_SERVICE`)
    await cb((done) => consumer.fetchRegistry(done))
    assert.equal(consumer.hasFullRegistry, true)
    const vip = consumer.getInstancesByVipAddress('orders')
    assert.deepEqual(vip.map((i: any) => `${i.instanceId}:${i.status}`).sort(), ['a:UP', 'b:OUT_OF_SERVICE'],
      'the client keeps MODIFIED non-UP instances in delta mode (why the adapter refuses delta and re-filters UP)')
  } finally {
    for (const c of [a, b, consumer]) await cb((done) => c.stop(done))
    await s.close()
  }
})

test('server responses for every fixture shape parse in eureka-js-client: full, delta, empty', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  const full = fixture('constructed-apps-full-modern.json') as any
  try {
    for (const app of full.applications.application) {
      for (const i of app.instance) {
        const { status: _s, overriddenStatus: _o, leaseInfo: _l, actionType: _a, ...reg } = i
        await call('POST', `${s.url}/apps/${app.name}`, { body: { instance: { ...reg, metadata: i.metadata['@class'] ? {} : i.metadata } } })
        if (i.status !== 'UP') await call('PUT', `${s.url}/apps/${app.name}/${i.instanceId}/status?value=${i.status}`)
      }
    }
    const consumer = jsClient({ serviceUrl: s.serviceUrl })
    await cb((done) => consumer.fetchRegistry(done))
    // Full: only UP instances are cached; the metadata placeholder comes through as-is.
    assert.deepEqual(Object.keys(consumer.cache.app).sort(), ['BILLING', 'ORDERS'])
    assert.deepEqual(consumer.getInstancesByAppId('orders').map((i: any) => i.instanceId), ['orders-1'])
    assert.deepEqual(consumer.getInstancesByAppId('billing')[0].metadata, { '@class': 'java.util.Collections$EmptyMap' })

    // Delta: orders-3 ADDED then DELETED, orders-2 MODIFIED, billing-1 re-registered (ADDED).
    const delta = jsClient({ serviceUrl: s.serviceUrl, shouldUseDelta: true })
    await cb((done) => delta.fetchRegistry(done))
    await call('POST', `${s.url}/apps/orders`, { body: body('orders-3', { hostName: '10.0.0.8', ipAddr: '10.0.0.8' }) })
    await call('DELETE', `${s.url}/apps/orders/orders-3`)
    await call('DELETE', `${s.url}/apps/orders/orders-2/status?value=UP`)
    const deltaBody = (await call('GET', `${s.url}/apps/delta`)).json
    assert.deepEqual(new Set(deltaBody.applications.application[0].instance.map((i: any) => i.actionType)), new Set(['ADDED', 'MODIFIED', 'DELETED']))
    await cb((done) => delta.fetchRegistry(done))
    assert.deepEqual(delta.getInstancesByVipAddress('orders').map((i: any) => i.instanceId).sort(), ['orders-1', 'orders-2'])

    // Empty: every instance gone, and the client's cache follows.
    for (const app of full.applications.application) for (const i of app.instance) await call('DELETE', `${s.url}/apps/${app.name}/${i.instanceId}`)
    assert.deepEqual((await call('GET', `${s.url}/apps`)).json, fixture('constructed-apps-empty.json'))
    await cb((done) => consumer.fetchRegistry(done))
    assert.deepEqual(consumer.cache, { app: {}, vip: {} })
  } finally {
    await s.close()
  }
})

test('after a server restart (registry lost) the client\'s heartbeat gets 404 and it registers again', async () => {
  const first = await startEureka({ useReadOnlyCache: false })
  const port = first.port
  const provider = jsClient({ serviceUrl: first.serviceUrl, instance: jsInstance('orders-1', 8080) })
  let second: Awaited<ReturnType<typeof startEureka>> | undefined
  try {
    await cb((done) => provider.start(done))
    await first.close()
    second = await startEureka({ useReadOnlyCache: false, port })
    await until(() => second!.snapshot().length === 1, 're-registration on the new server', { timeoutMs: 3_000 })
    assert.ok(second.requests().some((r) => r.method === 'PUT' && r.status === 404), 'a heartbeat was refused first')
    assert.ok(second.requests().some((r) => r.method === 'POST' && r.status === 204))
  } finally {
    await cb((done) => provider.stop(done))
    await second?.close()
  }
})
