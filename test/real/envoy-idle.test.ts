// Real Envoy 1.40.0 (Istio's layout: inbound listener 0.0.0.0_15006, --drain-strategy immediate,
// --drain-time-s 2): what a request on an idle pooled keep-alive connection meets at each moment
// of an inbound drain, and the sidecar drain step that ends on that evidence instead of waiting
// out drainTimeoutMs, with nothing lost. Negative controls: the count alone runs to the bound;
// a request after the app exited on a connection Envoy kept open is lost.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ENVOY_ERROR_CODES, type EnvoyAdminError } from '@lameduck/envoy'
import { until } from '@lameduck/test-utils'
import { Client } from 'undici'
import { startRealEnvoy, type RealEnvoy } from './helpers/envoy.ts'
import { consumer, runSidecarDrain, startApp, stat, type App } from './helpers/envoy-drain.ts'

const DRAIN_TIME_S = 2

async function setup (t: import('node:test').TestContext): Promise<{ app: App, envoy: RealEnvoy }> {
  const app = await startApp()
  t.after(() => app.server.listening ? app.close() : undefined)
  const envoy = await startRealEnvoy({ upstream: app.url, drainTimeS: DRAIN_TIME_S, drainStrategy: 'immediate' })
  t.after(() => envoy.stop())
  return { app, envoy }
}

const inboundCx = (envoy: RealEnvoy): Promise<number> => stat(envoy, `listener.${envoy.inboundStatAddress}.downstream_cx_active`)

/** One keep-alive connection, as a consumer's pool holds it. */
const pooled = (envoy: RealEnvoy): Client => new Client(envoy.inboundUrl, { keepAliveTimeout: 600_000, keepAliveMaxTimeout: 600_000, pipelining: 1 })

async function get (client: Client, path: string): Promise<{ status: number, connection: string | undefined }> {
  const res = await client.request({ method: 'GET', path })
  await res.body.text()
  return { status: res.statusCode, connection: res.headers.connection as string | undefined }
}

test('real Envoy: what a request on an idle pooled keep-alive connection meets during the drain time, after it, and after the app exited', async (t) => {
  const { app, envoy } = await setup(t)
  const [during, after, exited, never] = [pooled(envoy), pooled(envoy), pooled(envoy), pooled(envoy)]
  t.after(async () => { for (const c of [during, after, exited, never]) await c.close().catch(() => {}) })
  for (const c of [during, after, exited, never]) assert.deepEqual(await get(c, '/before'), { status: 200, connection: undefined })
  assert.equal(await inboundCx(envoy), 4)

  assert.equal((await envoy.admin('POST', '/drain_listeners?inboundonly&graceful')).body, 'OK\n')
  // During the drain time: served, told to close, and closed.
  assert.equal(await stat(envoy, 'listener_manager.listener_stopped'), 0, 'still inside the drain time')
  assert.deepEqual(await get(during, '/during'), { status: 200, connection: 'close' })
  await until(async () => await inboundCx(envoy) === 3, 'the told connection to close')

  // After the drain time the listener stops: a new connection is refused, a pooled one is still served.
  await until(async () => await stat(envoy, 'listener_manager.listener_stopped') === 1, 'the inbound listener to stop', { timeoutMs: 20_000 })
  const fresh = new Client(envoy.inboundUrl)
  t.after(() => fresh.close().catch(() => {}))
  await assert.rejects(get(fresh, '/new'), (e: NodeJS.ErrnoException) => e.code === 'ECONNREFUSED')
  assert.deepEqual(await get(after, '/after'), { status: 200, connection: 'close' })
  await until(async () => await inboundCx(envoy) === 2, 'the told connection to close')

  // Idle connections are never closed by Envoy: still open at twice the drain time.
  const drainedAt = Date.now()
  await until(() => Date.now() - drainedAt >= DRAIN_TIME_S * 1000, 'one more drain time to pass', { timeoutMs: 10_000 })
  assert.equal(await inboundCx(envoy), 2, 'the idle pooled connections outlive the drain')

  // After the app exited: Envoy is still there and answers the pooled connection with a 503.
  await app.close()
  const lost = await get(exited, '/after-exit')
  assert.deepEqual(lost, { status: 503, connection: 'close' }, 'a request the app can no longer serve')
  await envoy.stop()
})

test('real Envoy: the sidecar drain step ends once the pooled connections are idle and told to close, well before drainTimeoutMs, and nothing is lost', async (t) => {
  const { app, envoy } = await setup(t)
  const c = await consumer(envoy)
  t.after(() => c.agent.close())
  assert.ok(await inboundCx(envoy) >= 1, 'the consumer pools its connections')
  // A request still in flight when the drain starts: the step must outwait it.
  app.hold(1_500)
  let slowDoneAt = 0
  const slow = c.send('/slow').then(() => { slowDoneAt = Date.now() })
  await until(async () => await stat(envoy, `http.${envoy.inboundStatPrefix}.downstream_rq_active`) === 1, 'the slow request in flight')

  const drainTimeoutMs = 20_000
  const { problems, startedAt, endedAt } = await runSidecarDrain(envoy, { drainTimeoutMs, idleQuietMs: 500 })
  t.diagnostic(`sidecar phase ${endedAt - startedAt} ms (drainTimeoutMs ${drainTimeoutMs}, a 1500 ms request in flight, idleQuietMs 500)`)
  assert.deepEqual(problems, [], 'ended on the idle rule, not on drainTimeoutMs')
  assert.ok(slowDoneAt > 0 && slowDoneAt <= endedAt, 'the in-flight request finished inside the step')
  const left = await inboundCx(envoy)
  assert.ok(left >= 1, `the pooled connections are still open (${left}): Envoy never closes idle ones`)

  // Then the app exits and the pod's Envoy is stopped (SIGTERM by PID): the pool loses its
  // connections without sending on them.
  await slow
  await app.close()
  await envoy.stop()
  assert.deepEqual(c.failed, [])
  assert.equal(c.ok, 41)
})

test('negative control (real Envoy): with the count alone, an idle pooled consumer holds the step to drainTimeoutMs', async (t) => {
  const { envoy } = await setup(t)
  const c = await consumer(envoy)
  t.after(() => c.agent.close())
  const drainTimeoutMs = 2_500
  const { problems, startedAt, endedAt } = await runSidecarDrain(envoy, { drainTimeoutMs, idleQuietMs: false })
  assert.deepEqual(problems.map((p) => (p as EnvoyAdminError).code), [ENVOY_ERROR_CODES.TIMEOUT])
  assert.match((problems[0] as Error).message, /still open/)
  t.diagnostic(`sidecar phase ${endedAt - startedAt} ms (drainTimeoutMs ${drainTimeoutMs})`)
  assert.ok(endedAt - startedAt >= drainTimeoutMs, 'it waited out the whole bound')
  assert.ok(await inboundCx(envoy) >= 1, 'and the connections are still there')
})
