// Consumer → local Envoy → app. The app's offline sequence drains its sidecar
// only after the propagation window, so plain consumers that route by a stale
// instance list lose nothing; draining the sidecar when the window starts does.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import Fastify from 'fastify'
import { Agent, request } from 'undici'
import { memoryRegistry, type MemoryRegistry } from '@lameduck/core'
import { startEnvoy, type LocalEnvoy } from '@lameduck/devkit'
import lameduck from '@lameduck/fastify'
import { gate } from '@lameduck/test-utils'
import { steadyLoad, until } from '../helpers.ts'

/**
 * An app behind its own local Envoy; the registry gets the Envoy's port, as a mesh pod would advertise.
 * Envoy needs its upstream before the app (which needs Envoy's ports) listens: the upstream is a gate
 * that holds its port and forwards to the app's own port-0 listener once it is up.
 */
async function podWithSidecar (id: string, registry: MemoryRegistry, sidecar: boolean, windowMs: number, envoyOptions: Record<string, unknown> = {}) {
  const upstream = await gate()
  const envoy = await startEnvoy({ upstream: upstream.url(), drainTimeMs: 600, statsFlushIntervalMs: 50, ...envoyOptions })
  const app = Fastify({ logger: false })
  await app.register(lameduck, {
    service: 'orders',
    host: '127.0.0.1',
    port: envoy.port,
    instanceId: id,
    registry,
    warmupMs: 0,
    signals: false,
    admin: { port: 0 },
    windows: { clientFetchMs: windowMs },
    sidecar: sidecar ? { envoyAdmin: envoy.adminUrl, readyTimeoutMs: 5_000, drainTimeoutMs: 3_000, checkIntervalMs: 50, idleQuietMs: 500, connections: { method: 'json' } } : false
  })
  app.get('/work', async (_req, reply) => { reply.header('x-instance', id); return { id } })
  app.addHook('onClose', () => upstream.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  upstream.open((app.server.address() as { port: number }).port)
  return { app, envoy, id }
}

/** A consumer that knows nothing of lameduck: round robin over the (lagging) instance list, keep-alive. */
function plainConsumer (registry: MemoryRegistry, agent: Agent) {
  let n = 0
  return async () => {
    const list = registry.instances('orders')
    const target = list[n++ % list.length]
    if (target === undefined) throw new Error('no instance')
    const res = await request(`http://127.0.0.1:${target.port}/work`, { dispatcher: agent })
    await res.body.dump()
    if (res.statusCode !== 200) throw Object.assign(new Error(`status ${res.statusCode}`), { code: `HTTP_${res.statusCode}` })
    return String(res.headers['x-instance'])
  }
}

async function scenario (t: import('node:test').TestContext, mode: 'lameduck' | 'drain-at-window-start') {
  const windowMs = 800
  const registry = memoryRegistry({ propagationDelayMs: windowMs - 100 })
  const a = await podWithSidecar('a', registry, mode === 'lameduck', windowMs)
  const b = await podWithSidecar('b', registry, mode === 'lameduck', windowMs)
  t.after(async () => { await a.app.close(); await b.app.close(); await a.envoy.close(); await b.envoy.close() })
  await until(() => registry.instances('orders').length === 2, 'both registered and visible')
  const agent = new Agent({ keepAliveTimeout: 30_000, connections: 4 })
  t.after(() => agent.close())
  const load = steadyLoad(plainConsumer(registry, agent), 4)
  await until(() => (load.stats.byInstance.get('a') ?? 0) > 30, 'traffic through a\'s sidecar')
  const started = Date.now()
  if (mode === 'drain-at-window-start') {
    // What a sidecar without coordination does: it drains as soon as the pod starts terminating.
    await request(`${a.envoy.adminUrl}/drain_listeners?inboundonly`, { method: 'POST' })
  }
  const res = await request(`${a.app.lameduck.adminUrl}/offline?wait=true`, { method: 'POST' })
  const body = await res.body.json() as { state: string, report: { sidecarMs: number, problems: unknown[] } }
  await new Promise((resolve) => setTimeout(resolve, 100))
  await load.stop()
  return { a, b, load, started, body }
}

test('through the sidecar: zero failures, Envoy drained only after the window, connections move away, app offline', async (t) => {
  const { a, load, started, body } = await scenario(t, 'lameduck')
  assert.equal(body.state, 'offline')
  assert.deepEqual(body.report.problems, [])
  assert.equal(load.stats.failed, 0, load.stats.errors.slice(0, 5).join(', '))
  const drainCall = a.envoy.adminLog.find((e) => e.url.startsWith('/drain_listeners'))
  assert.ok(drainCall, 'the sidecar was drained')
  // Not a throughput floor (a loaded machine sends fewer): traffic ran through the whole sequence.
  assert.ok((load.stats.lastAt.get('b') ?? 0) > drainCall.at, 'requests still flowing (to b) after a\'s sidecar was drained')
  assert.equal(drainCall.method, 'POST')
  assert.match(drainCall.url, /inboundonly/)
  assert.match(drainCall.url, /graceful/)
  assert.ok(drainCall.at - started >= 800, `drained only after the 800 ms window (${drainCall.at - started} ms)`)
  const lastToA = load.stats.lastAt.get('a')!
  assert.ok(lastToA <= drainCall.at, 'consumers had moved away before the drain')
  // Envoy leaves the consumer's idle pooled connections open (as real Envoy 1.40.0 does); the
  // step ended because none carried a request and each closes on its next response.
  assert.equal(a.envoy.stat('http.ingress_http.downstream_rq_active'), 0, 'no request left on the drained sidecar')
})

test('negative control: a sidecar that drains when the window starts loses requests', async (t) => {
  const { load } = await scenario(t, 'drain-at-window-start')
  assert.ok(load.stats.failed > 0, 'the test can see the loss')
})

test('waitReady: an app whose sidecar turns LIVE after a delay registers only then; never LIVE fails startup clearly', async (t) => {
  const registry = memoryRegistry()
  const t0 = Date.now()
  const slow = await podWithSidecar('slow', registry, true, 100, { initializeDelayMs: 1_000 })
  t.after(async () => { await slow.app.close(); await slow.envoy.close() })
  await until(() => registry.registered('orders').length === 1, 'registration', { timeoutMs: 5_000 })
  assert.ok(Date.now() - t0 >= 1_000, 'registered only after Envoy was LIVE')
  const statusOk = await request(`${slow.app.lameduck.adminUrl}/status`)
  assert.equal(((await statusOk.body.json()) as { state: string }).state, 'serving')

  // Never LIVE.
  const envoy: LocalEnvoy = await startEnvoy({ upstream: 'http://127.0.0.1:9', initializeDelayMs: 60_000 })
  t.after(() => envoy.close())
  const app = Fastify({ logger: false })
  await app.register(lameduck, { service: 'never', host: '127.0.0.1', registry, signals: false, admin: { port: 0 }, sidecar: { envoyAdmin: envoy.adminUrl, readyTimeoutMs: 500 } })
  t.after(() => app.close())
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  await until(async () => (await request(`${url}/health/live`)).statusCode === 503, 'startup to fail')
  // The app port says only the state; the detail is on the admin /status.
  assert.deepEqual(await (await request(`${url}/health/live`)).body.json(), { state: 'waiting', error: 'startup failed' })
  assert.match(app.lameduck.status().broken as string, /waiting for Envoy at http:\/\/127\.0\.0\.1:\d+ to report LIVE on \/ready .* did not complete within 500 ms/)
  assert.equal(registry.registered('never').length, 0)
})
