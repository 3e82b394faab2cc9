// End to end: two providers on @lameduck/fastify registered in the local Eureka
// server, a consumer routing by Eureka discovery, one provider goes /offline and
// then stops. No request may fail.
import { test } from 'node:test'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import assert from 'node:assert/strict'
import Fastify, { type FastifyInstance } from 'fastify'
import { Agent, request } from 'undici'
import lameduck from '@lameduck/fastify'
import { startEureka } from '@lameduck/devkit'
import { eurekaDiscovery, eurekaRegistry } from '@lameduck/eureka'
import { sleep, until } from './helpers.ts'

const CACHE_MS = 200
const FETCH_MS = 200

async function provider (eurekaUrl: string, name: string): Promise<{ app: FastifyInstance, url: string, admin: string }> {
  const app = Fastify({ logger: false })
  await app.register(lameduck, {
    service: 'orders',
    host: '127.0.0.1',
    registry: eurekaRegistry({
      url: eurekaUrl,
      client: { eureka: { heartbeatInterval: 500 } },
      leaseDurationSecs: 5,
      // Consumers fetch every FETCH_MS and use no balancer cache; 100 ms margin for request latency.
      windows: { responseCacheUpdateIntervalMs: CACHE_MS, registryFetchIntervalMs: FETCH_MS, balancer: 'none', marginMs: 100 }
    }),
    warmupMs: 0,
    signals: false,
    admin: { port: 0 }
  })
  app.get('/who', async () => ({ name }))
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url, admin: app.lameduck.adminUrl! }
}

test('one of two providers goes /offline and stops while a Eureka-routed consumer keeps calling: zero failures', async (t) => {
  const eureka = await startEureka({ responseCacheUpdateIntervalMs: CACHE_MS })
  const a = await provider(eureka.url, 'a')
  const b = await provider(eureka.url, 'b')
  const discovery = eurekaDiscovery({ url: eureka.url, client: { eureka: { registryFetchInterval: FETCH_MS } } })
  const agent = new Agent({ keepAliveTimeout: 10_000 })
  t.after(async () => {
    // Providers first (they deregister), Eureka last.
    await Promise.all([a.app.close(), b.app.close(), discovery.close(), agent.close()])
    await eureka.close()
  })
  await until(() => discovery.instances('orders').length === 2, 'the consumer to see both providers', { timeoutMs: 5_000 })
  const seen = discovery.instances('orders')
  assert.ok(seen.every((i) => i.metadata['lameduck.registeredAt'] !== undefined && i.metadata.timestamp !== undefined), 'warmup metadata published')

  // The consumer: round-robin over what discovery shows, keep-alive connections, 4 loops.
  const counts = { ok: 0, failed: 0, byName: {} as Record<string, number>, draining: 0 }
  const failures: string[] = []
  let next = 0
  const state = { running: true }
  let t0 = Date.now()
  const loop = async (): Promise<void> => {
    while (state.running) {
      const list = discovery.instances('orders')
      const target = list[next++ % list.length]
      if (target === undefined) { counts.failed++; failures.push('no instance'); await sleep(5); continue }
      // When the consumer routed it: the response comes later on a busy machine.
      const routedAt = Date.now()
      try {
        const res = await request(`http://${target.host}:${target.port}/who`, { dispatcher: agent })
        const body = await res.body.json() as { name: string }
        if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
        counts.ok++
        counts.byName[body.name] = (counts.byName[body.name] ?? 0) + 1
        if (body.name === 'a' && offlineAt > 0) lastToA = Math.max(lastToA, routedAt - offlineAt)
        if (res.headers['x-lameduck-state'] !== undefined) counts.draining++
      } catch (err) {
        counts.failed++
        failures.push(`${target.port === Number(new URL(a.url).port) ? 'a' : 'b'} (a ${a.app.lameduck.state}, +${Date.now() - t0} ms): ${(err as Error).message}`)
      }
    }
  }
  // ms after /offline of the last request the consumer routed to a (by its eureka-js-client list).
  let lastToA = -1
  let offlineAt = 0
  const loops = Array.from({ length: 4 }, loop)

  await sleep(300)
  // The server's cache tick and the client's fetch are timers: on a busy machine each fires as
  // late as the event loop's worst delay, measured here and allowed for on each of the two.
  const lag = monitorEventLoopDelay({ resolution: 5 })
  lag.enable()
  t0 = offlineAt = Date.now()
  const offline = await request(`${a.admin}/offline`, { method: 'POST' })
  assert.equal(offline.statusCode, 202)
  const plan = await offline.body.json() as { windowMs: number }
  assert.equal(plan.windowMs, CACHE_MS + FETCH_MS + 100, 'the window the Eureka registry suggested')
  await until(() => a.app.lameduck.state === 'offline', 'provider a offline', { timeoutMs: 5_000 })
  const servedByA = counts.byName.a ?? 0
  // The process stops: anything still routed to it now would fail.
  await a.app.close()
  await sleep(500)
  state.running = false
  await Promise.all(loops)

  assert.deepEqual(failures, [], 'no request failed')
  // No throughput floor (a starved machine sends fewer): the traffic is proven by what follows.
  assert.ok(counts.draining > 0, 'requests reached a while it was draining (it kept serving)')
  assert.equal(counts.byName.a, servedByA, 'nothing reached a after it went offline')
  assert.ok((counts.byName.b ?? 0) > servedByA / 2, 'b took over')
  assert.deepEqual(eureka.snapshot().map((i) => i.port), [Number(new URL(b.url).port)], 'only b is registered')
  // The consumer stopped routing to a within the computed window (measured: DELETE → last request),
  // so a saw its last routed request before its window ended.
  assert.ok(lastToA >= 0, 'a was routed to after /offline (the caches really lag)')
  lag.disable()
  const late = 2 * Math.round(lag.max / 1e6)
  assert.ok(lastToA <= plan.windowMs + late, `the consumer stopped routing to a ${lastToA} ms after /offline, within the ${plan.windowMs} ms window (+ ${late} ms: twice the event loop's worst delay)`)
  t.diagnostic(`DELETE → consumer stopped routing: ${lastToA} ms (window ${plan.windowMs} ms)`)
  t.diagnostic(`requests: ${counts.ok} ok (${JSON.stringify(counts.byName)}), ${counts.draining} answered while draining, ${counts.failed} failed`)
})
