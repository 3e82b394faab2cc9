import { test } from 'node:test'
import assert from 'node:assert/strict'
import { memoryRegistry, virtualClock, InFlightTracker, type Instance } from '@lameduck/core'

const instance = (id: string, port: number): Instance => ({ id, service: 'orders', host: '127.0.0.1', port, status: 'UP', metadata: {} })

test('memory registry shows changes after the propagation delay, case-insensitively', async () => {
  const clock = virtualClock()
  const reg = memoryRegistry({ propagationDelayMs: 1_000, clock })
  const seen: number[] = []
  reg.subscribe('ORDERS', (list) => seen.push(list.length))
  await reg.register(instance('a', 1))
  assert.equal(reg.instances('orders').length, 0, 'not visible before the delay')
  assert.equal(reg.registered('orders').length, 1)
  await clock.advance(999)
  assert.equal(reg.instances('Orders').length, 0)
  await clock.advance(1)
  assert.equal(reg.instances('Orders').length, 1)
  await reg.setStatus(instance('a', 1), 'OUT_OF_SERVICE')
  await clock.advance(1_000)
  assert.equal(reg.instances('orders').length, 0, 'only UP instances are discovered')
  await reg.deregister(instance('a', 1))
  await clock.advance(1_000)
  assert.deepEqual(seen, [1, 0, 0])
  await reg.close()
  await assert.rejects(reg.register(instance('b', 2)), /after close/)
})

test('in-flight tracker resolves idle() at zero', async () => {
  const t = new InFlightTracker()
  t.start(); t.start()
  let idle = false
  const p = t.idle().then(() => { idle = true })
  t.end()
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(idle, false)
  t.end()
  await p
  assert.equal(idle, true)
  assert.equal(t.total, 2)
  t.end() // never below zero
  assert.equal(t.count, 0)
})
