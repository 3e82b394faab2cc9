// The consumer side with real grpc-js clients and servers on 127.0.0.1: a
// `lameduck://` target resolves through a Discovery, stops calling an instance
// once discovery drops it (or once its trailers say it is leaving), ramps a new
// one, and tells providers who it is. Each with the plain static target as the
// negative control.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import * as grpc from '@grpc/grpc-js'
import { memoryRegistry, virtualClock, warmupMetadata } from '@lameduck/core'
import { until } from '@lameduck/test-utils'
import { lameduckResolver } from '../src/client/index.ts'
import { call, instance, load, startServer, WorkClient, type TestServer } from './client-helpers.ts'

const insecure = grpc.credentials.createInsecure()
const ROUND_ROBIN = JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] })
const open: Array<{ close(): void }> = []
after(() => { for (const c of open) c.close() })

function staticClient (servers: TestServer[]): InstanceType<typeof WorkClient> {
  const c = new WorkClient(`ipv4:${servers.map((s) => `127.0.0.1:${s.port}`).join(',')}`, insecure, { 'grpc.service_config': ROUND_ROBIN })
  open.push(c)
  return c
}

async function twoServers (): Promise<[TestServer, TestServer]> {
  const servers = await Promise.all([startServer('a'), startServer('b')])
  open.push({ close: () => { for (const s of servers) s.forceShutdown() } })
  return servers
}

describe('lameduckResolver: discovery-fed gRPC client', () => {
  it('resolves lameduck://<name>/<service> through the discovery and spreads calls over every instance, sending its consumer id', async () => {
    const [a, b] = await twoServers()
    const registry = memoryRegistry()
    await registry.register(instance(a))
    await registry.register(instance(b))
    const resolver = lameduckResolver({ discovery: registry, consumerId: 'consumer-1' })
    open.push(resolver)
    assert.match(resolver.target('orders'), /^lameduck:\/\/discovery-\d+\/orders$/)
    const client = new WorkClient(resolver.target('orders'), insecure)
    open.push(client)
    for (let i = 0; i < 20; i++) await call(client)
    assert.ok(a.calls >= 5 && b.calls >= 5, `both instances called: a ${a.calls}, b ${b.calls}`)
    assert.deepEqual([...a.consumers, ...b.consumers], ['consumer-1', 'consumer-1'])
  })

  it('stops calling an instance once discovery drops it, so its end loses nothing; a static target keeps calling it and loses calls (negative control)', async () => {
    for (const mode of ['lameduck', 'static'] as const) {
      const [a, b] = await twoServers()
      const registry = memoryRegistry()
      await registry.register(instance(a))
      await registry.register(instance(b))
      const resolver = lameduckResolver({ discovery: registry })
      open.push(resolver)
      const client = mode === 'lameduck' ? new WorkClient(resolver.target('orders'), insecure) : staticClient([a, b])
      open.push(client)
      const traffic = load(client, 8, 20)
      await until(() => a.calls > 10 && b.calls > 10, 'traffic on both instances')
      await registry.deregister(instance(a))
      const [aAt, bAt] = [a.calls, b.calls]
      if (mode === 'lameduck') {
        await until(() => a.inFlight === 0 && b.calls > bAt + 50, 'a idle while b takes the traffic')
        assert.ok(a.calls - aAt <= 8, `at most the calls already picked reached a after its deregistration: ${a.calls - aAt}`)
      } else {
        await until(() => a.calls > aAt + 20 && a.inFlight > 0, 'the static client still calling a')
      }
      // The instance's end, as a pod killed after its window (or a process that exits).
      a.forceShutdown()
      const okAt = traffic.ok
      await until(() => traffic.ok > okAt + 50, 'calls after a ended')
      await traffic.stop()
      if (mode === 'lameduck') assert.equal(traffic.failed, 0, traffic.errors.join('\n'))
      else assert.ok(traffic.failed > 0, 'the static target had calls in flight on the instance that ended')
    }
  })

  it('drops an instance whose trailers say it is leaving, while discovery still lists it; a static round_robin target keeps calling it (negative control)', async () => {
    for (const mode of ['lameduck', 'static'] as const) {
      const [a, b] = await twoServers()
      const registry = memoryRegistry()
      await registry.register(instance(a))
      await registry.register(instance(b))
      const resolver = lameduckResolver({ discovery: registry })
      open.push(resolver)
      const client = mode === 'lameduck' ? new WorkClient(resolver.target('orders'), insecure) : staticClient([a, b])
      open.push(client)
      for (let i = 0; i < 10; i++) await call(client)
      a.state = 'draining'
      // The first answer with the trailer; one more already picked may follow.
      await until(async () => { await call(client); return a.calls > 0 && b.calls > 0 }, 'calls')
      const aAt = a.calls
      for (let i = 0; i < 40; i++) await call(client)
      if (mode === 'lameduck') {
        assert.ok(a.calls - aAt <= 1, `a is no longer picked: ${a.calls - aAt} calls after it said draining`)
        assert.deepEqual(resolver.stats('orders').map((s) => [s.id, s.leaving]), [['a', true], ['b', false]])
      } else {
        assert.ok(a.calls - aAt >= 15, `the static client keeps calling a: ${a.calls - aAt}`)
      }
      // Serving again (online()): picked again.
      a.state = 'serving'
      if (mode === 'lameduck') {
        await call(client) // b answers; a's next answer says serving
        b.state = null
        // a is out of the list, so only a discovery change or a call to a brings it back: registering again does.
        await registry.deregister(instance(a))
        await registry.register(instance(a, { 'lameduck.registeredAt': String(Date.now()) }))
        await until(async () => { await call(client); return resolver.stats('orders').length === 2 && !resolver.stats('orders').some((s) => s.leaving) }, 'a registered again, not leaving')
      }
    }
  })

  it('ramps a new instance by its published warmup (weight ~1 of 100 at the start), full share once warm; without warmup an equal share (control)', async () => {
    const clock = virtualClock(Date.now())
    const [a, b] = await twoServers()
    const registry = memoryRegistry()
    await registry.register(instance(a))
    const resolver = lameduckResolver({ discovery: registry, clock })
    open.push(resolver)
    const client = new WorkClient(resolver.target('orders'), insecure)
    open.push(client)
    await call(client)
    await registry.register(instance(b, warmupMetadata({ registeredAt: clock.now(), warmupMs: 60_000, weight: 100 })))
    await until(() => resolver.stats('orders').length === 2, 'b discovered')
    await until(async () => { await call(client); return b.calls > 0 }, 'b connected and picked once')
    const [a0, b0] = [a.calls, b.calls]
    for (let i = 0; i < 202; i++) await call(client)
    assert.ok(b.calls - b0 <= 4, `b warming (weight 1 vs 100): ${b.calls - b0} of 202`)
    assert.ok(a.calls - a0 >= 198)
    await clock.advance(60_000)
    const [a1, b1] = [a.calls, b.calls]
    for (let i = 0; i < 100; i++) await call(client)
    assert.ok(b.calls - b1 >= 45 && a.calls - a1 >= 45, `warm: an equal share (a ${a.calls - a1}, b ${b.calls - b1})`)
  })

  it('a target whose name has no resolver fails its calls with a clear UNAVAILABLE; options are checked at the edge', async () => {
    const resolver = lameduckResolver({ discovery: memoryRegistry(), name: 'checked' })
    resolver.close()
    const client = new WorkClient('lameduck://nowhere/orders', insecure)
    open.push(client)
    await assert.rejects(call(client), (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE && /no lameduckResolver named 'nowhere'/.test(err.details))
    assert.throws(() => lameduckResolver({} as never), { code: 'LAMEDUCK_ERR_INVALID_OPTION', message: /discovery/ })
    assert.throws(() => lameduckResolver({ discovery: memoryRegistry(), name: 'a/b' }), /name/)
    assert.throws(() => lameduckResolver({ discovery: memoryRegistry(), consumerId: 'x\ny' }), /consumerId/)
    assert.throws(() => lameduckResolver({ discovery: memoryRegistry(), curvee: 'linear' } as never), /curvee/)
    const named = lameduckResolver({ discovery: memoryRegistry(), name: 'twice' })
    open.push(named)
    assert.throws(() => lameduckResolver({ discovery: memoryRegistry(), name: 'twice' }), /already open/)
    assert.throws(() => named.target('a b'), /service/)
  })
})
