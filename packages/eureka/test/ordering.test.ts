// Registry calls land in the order issued (issue 13.8): a deregister that
// outlives the lifecycle's registryTimeoutMs, then /online, ends registered.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createLifecycle, TimeoutError } from '@lameduck/core'
import { startEureka } from '@lameduck/devkit'
import { eurekaRegistry } from '@lameduck/eureka'
import { delayProxy, until } from './helpers.ts'

const FAST = { eureka: { heartbeatInterval: 100, maxRetries: 0 } }
const PATH = '/eureka/apps/ORDERS/orders-1'

for (const offlineMode of ['delete', 'out-of-service'] as const) {
  test(`eureka (${offlineMode}): a deregister slower than registryTimeoutMs, then online(): ends registered and UP`, async () => {
    const s = await startEureka({ useReadOnlyCache: false })
    // The offline call (DELETE, or PUT status=OUT_OF_SERVICE) reaches the server 800 ms late; the lifecycle gives up after 200 ms.
    const isOffline = (method: string, path: string): boolean => offlineMode === 'delete' ? method === 'DELETE' && path === PATH : method === 'PUT' && path.startsWith(`${PATH}/status?value=OUT_OF_SERVICE`)
    let slow = true
    const proxy = await delayProxy(s.url, (method, path) => slow && isOffline(method, path) ? 800 : 0)
    const registry = eurekaRegistry({ url: proxy.url, client: FAST, offlineMode })
    const lifecycle = createLifecycle({ registry, windows: { serverCacheMs: 60_000 }, registryTimeoutMs: 200, registryBackoff: { initialMs: 50, maxMs: 50 } })
    const problems: string[] = []
    lifecycle.on('problem', (p) => problems.push(p.message))
    try {
      await lifecycle.start({ id: 'orders-1', service: 'orders', host: '127.0.0.1', port: 3001 })
      assert.equal(s.snapshot().length, 1)
      lifecycle.offline('admin').catch(() => {})
      await until(() => problems.some((m) => m.includes(new TimeoutError('registry deregister', 200).message)), 'the lifecycle to time the deregister out', { timeoutMs: 3_000 })
      assert.ok(proxy.held.length > 0, 'the offline call is still on its way')
      slow = false
      await lifecycle.online('admin')
      assert.equal(lifecycle.state, 'serving')
      await until(() => proxy.held.length === 0, 'the slow call to land', { timeoutMs: 3_000 })
      // Whatever the server saw, its last word must be the registration.
      await until(() => s.snapshot()[0]?.status === 'UP' && s.snapshot()[0]?.overriddenStatus !== 'OUT_OF_SERVICE', 'registered and UP', { timeoutMs: 3_000 })
      await new Promise((resolve) => setTimeout(resolve, 300)) // heartbeats run; nothing may take it out again
      const [held] = s.snapshot()
      assert.equal(held?.status, 'UP', 'registered, as the last call said')
      const offlineCalls = s.requests().filter((r) => isOffline(r.method, r.path))
      const lastRegister = s.requests().filter((r) => r.method === 'POST' && r.path === '/eureka/apps/ORDERS').at(-1)
      assert.ok(offlineCalls.length >= 1 && lastRegister !== undefined && lastRegister.at >= offlineCalls.at(-1)!.at, 'the register landed after the slow offline call')
    } finally {
      lifecycle.beginClose('test') // no drain: the window is long
      await lifecycle.stopped()
      await proxy.close()
      await s.close()
    }
  })
}

test('eureka adapter: an aborted signal rejects the call at once; the call still lands before the next one', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  const proxy = await delayProxy(s.url, (method, path) => method === 'DELETE' && path === PATH ? 600 : 0)
  const registry = eurekaRegistry({ url: proxy.url, client: FAST, registerTimeoutMs: 5_000 })
  const i = { id: 'orders-1', service: 'orders', host: '127.0.0.1', port: 3001, status: 'UP' as const, metadata: {} }
  try {
    await registry.register(i)
    const gaveUp = new AbortController()
    const deregistered = registry.deregister(i, { signal: gaveUp.signal })
    await until(() => proxy.held.length === 1, 'the DELETE on its way', { timeoutMs: 2_000 })
    gaveUp.abort(new TimeoutError('registry deregister', 100))
    await assert.rejects(deregistered, /registry deregister failed: the caller gave up/)
    assert.equal(proxy.held.length, 1, 'rejected before the DELETE landed')
    await registry.register(i, { signal: new AbortController().signal })
    assert.equal(proxy.held.length, 0, 'the register waited for the DELETE')
    assert.equal(s.snapshot().length, 1)
  } finally {
    await registry.close()
    await proxy.close()
    await s.close()
  }
})
