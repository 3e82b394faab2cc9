// Registry calls land in the order issued (issue 13.8): a deregister that
// outlives the lifecycle's registryTimeoutMs, then /online, ends registered.
// Before, the lifecycle's queue moved on at the timeout and the late DELETE
// removed the instance the next register had just put back.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createLifecycle, TimeoutError } from '@lameduck/core'
import { startNacos } from '@lameduck/devkit'
import { nacosRegistry } from '@lameduck/nacos'
import { delayProxy, instance, waitFor } from './helpers.ts'

const isDelete = (method: string, path: string): boolean => method === 'DELETE' && path.startsWith('/nacos/v1/ns/instance?')

test('nacos: a deregister slower than registryTimeoutMs, then online(): ends registered', async (t) => {
  const server = await startNacos()
  let slow = true
  // The DELETE reaches the server 800 ms late; the lifecycle gives up after 200 ms.
  const proxy = await delayProxy(server.serverList, (method, path) => slow && isDelete(method, path) ? 800 : 0)
  const registry = nacosRegistry({ serverList: proxy.serverList })
  const lifecycle = createLifecycle({ registry, windows: { serverCacheMs: 60_000 }, registryTimeoutMs: 200, registryBackoff: { initialMs: 50, maxMs: 50 } })
  t.after(async () => { lifecycle.beginClose('test'); await lifecycle.stopped(); await proxy.close(); await server.close() })
  const problems: string[] = []
  lifecycle.on('problem', (p) => problems.push(p.message))
  await lifecycle.start({ id: 'orders-1', service: 'orders', host: '127.0.0.1', port: 3001 })
  assert.equal(server.instances('orders').length, 1)
  lifecycle.offline('admin').catch(() => {})
  await waitFor('the lifecycle to time the deregister out', () => problems.some((m) => m.includes(new TimeoutError('registry deregister', 200).message)), 3_000)
  assert.ok(proxy.held.length > 0, 'the DELETE is still on its way')
  slow = false
  await lifecycle.online('admin')
  assert.equal(lifecycle.state, 'serving')
  await waitFor('the slow DELETE to land', () => proxy.held.length === 0, 3_000)
  await new Promise((resolve) => setTimeout(resolve, 300)) // anything still on its way lands
  assert.equal(server.instances('orders').length, 1, 'registered, as the last call said')
})

test('nacos adapter: calls for one instance run in the order issued; a call whose signal aborted while it waited is never sent', async (t) => {
  const server = await startNacos()
  const proxy = await delayProxy(server.serverList, (method, path) => isDelete(method, path) ? 500 : 0)
  const registry = nacosRegistry({ serverList: proxy.serverList })
  t.after(async () => { await registry.close(); await proxy.close(); await server.close() })
  const orders = instance(3001)
  await registry.register(orders)
  const deregistered = registry.deregister(orders) // slow DELETE
  const gaveUp = new AbortController()
  const dropped = registry.deregister(orders, { signal: gaveUp.signal }) // queued behind it
  const registered = registry.register(orders) // issued last: must land last
  await waitFor('the DELETE on its way', () => proxy.held.length === 1, 2_000)
  gaveUp.abort(new Error('the caller gave up'))
  await deregistered
  await assert.rejects(dropped, /the caller gave up/)
  await registered
  assert.equal(server.instances('orders').length, 1, 'the register issued last landed last')
  assert.equal(proxy.held.length, 0)
})
