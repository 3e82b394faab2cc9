// Heartbeats on the injected clock: the timers run on virtual time, each heartbeat
// itself is a real PUT to the devkit's Eureka stand-in (mirrors the Nacos beat test).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { virtualClock } from '@lameduck/core'
import { startEureka } from '@lameduck/devkit'
import { eurekaRegistry } from '@lameduck/eureka'
import { until } from '@lameduck/test-utils'
import { instance } from './helpers.ts'

test('heartbeats come every heartbeatInterval on the adapter\'s clock, to the millisecond; none after deregister', async (t) => {
  const clock = virtualClock()
  const s = await startEureka({ useReadOnlyCache: false })
  const registry = eurekaRegistry({ url: s.url, client: { eureka: { heartbeatInterval: 200, maxRetries: 0 } }, clock })
  t.after(async () => { await registry.close(); await s.close() })
  const i = instance('orders-1', 3001)
  const puts = (): number => s.requests().filter((r) => r.method === 'PUT' && r.path === `/eureka/apps/ORDERS/${i.id}`).length
  const registeredAt = clock.now()
  await registry.register(i)

  const beatsAt: number[] = []
  // The next heartbeat is due once the previous one was answered and its timer set.
  const nextBeat = async (dueInMs: number): Promise<void> => {
    const before = puts()
    await until(() => clock.pending === 1, 'the next heartbeat timer')
    await clock.advance(dueInMs - 1)
    assert.equal(puts(), before, `no heartbeat before ${dueInMs} ms`)
    await clock.advance(1)
    await until(() => puts() === before + 1, 'the heartbeat to reach the server')
    beatsAt.push(clock.now() - registeredAt)
  }
  for (let n = 0; n < 3; n++) await nextBeat(200)
  assert.deepEqual(beatsAt, [200, 400, 600], 'one heartbeat per heartbeatInterval, from registration on')
  await until(() => (registry.describe().instances as Array<{ heartbeats: number }>)[0]!.heartbeats === 3, 'the adapter to count the third heartbeat')
  const described = (registry.describe().instances as Array<{ lastHeartbeatAt: number }>)[0]!
  assert.equal(described.lastHeartbeatAt, registeredAt + 600, 'lastHeartbeatAt is on the injected clock')
  assert.deepEqual(s.snapshot().map((x) => x.id), [i.id])

  await until(() => clock.pending === 1, 'the next heartbeat timer')
  await registry.deregister(i)
  assert.equal(clock.pending, 0, 'deregister cancels the heartbeat timer')
  const count = puts()
  await clock.advance(10_000)
  assert.equal(puts(), count, 'no heartbeat after deregistration (a 404 would make it register again)')
  assert.deepEqual(s.snapshot(), [])
})
