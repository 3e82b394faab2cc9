// A registry that answers 5xx or hangs past the client timeouts, through a fault
// proxy in front of the devkit Eureka and Nacos: registration keeps retrying,
// every failure is reported, and an /offline keeps serving (and retrying) until
// the shutdown budget's bound, then reports the deregistration unconfirmed; once
// the registry answers again the instance is removed for good.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import { request } from 'undici'
import { SHUTDOWN_DEFAULTS, type OfflineReport, type Registry } from '@lameduck/core'
import { startEureka, startNacos } from '@lameduck/devkit'
import { eurekaRegistry } from '@lameduck/eureka'
import { nacosRegistry } from '@lameduck/nacos'
import { faultProxy, loggedProvider, memoryLog, status, steadyLoad, until, waitState, type FaultProxy, type Log } from './helpers.ts'

const WINDOW_MS = 800

interface Rig {
  proxy: FaultProxy
  /** Ids the registry holds right now. */
  held(): string[]
  registry(log: Log): Registry
  close(): Promise<void>
}

async function eurekaRig (): Promise<Rig> {
  const server = await startEureka({ useReadOnlyCache: false })
  const proxy = await faultProxy(`http://127.0.0.1:${server.port}`)
  return {
    proxy,
    held: () => server.snapshot().map((i) => `${i.hostName}:${i.port}`),
    // requestTimeoutMs bounds each HTTP call; a hang becomes a timeout error.
    registry: (log) => eurekaRegistry({ url: `${proxy.url}/eureka`, logger: log.logger, requestTimeoutMs: 300, registerTimeoutMs: 1_000, client: { eureka: { heartbeatInterval: 100, maxRetries: 0 } } }),
    async close () { await proxy.close(); await server.close() }
  }
}

async function nacosRig (): Promise<Rig> {
  const server = await startNacos({ push: false })
  const proxy = await faultProxy(`http://127.0.0.1:${server.port}`)
  return {
    proxy,
    held: () => server.instances('orders').map((i) => `${i.ip}:${i.port}`),
    registry: (log) => nacosRegistry({ serverList: `127.0.0.1:${proxy.port}`, logger: log.logger, beatIntervalMs: 100 }),
    async close () { await proxy.close(); await server.close() }
  }
}

async function scenario (t: TestContext, rig: Rig, expect: { error5xx: RegExp, hang: RegExp }): Promise<void> {
  const log = memoryLog()
  const instanceOnly = (req: { url?: string }): boolean => /\/(instance|apps)/.test(req.url ?? '')
  // Registration under 5xx: retried and reported, /health/ready 503 meanwhile.
  rig.proxy.fault = (req) => instanceOnly(req) ? { status: 500, body: 'internal error' } : 'pass'
  const a = await loggedProvider('a', { registry: rig.registry(log), windows: { clientFetchMs: WINDOW_MS } }, log)
  // Hooks run in the order they are added: the provider before its registry.
  t.after(async () => { rig.proxy.fault = () => 'pass'; await a.app.close(); await rig.close() })
  await until(async () => (await status(a.admin)).problems.length >= 2, 'two failed registrations')
  assert.equal(a.app.lameduck.state, 'registering')
  assert.equal((await request(`${a.url}/health/ready`)).statusCode, 503)
  assert.match((await status(a.admin)).problems[0]!.message, expect.error5xx)
  rig.proxy.fault = () => 'pass'
  await waitState(a.app, 'serving')
  const me = `127.0.0.1:${new URL(a.url).port}`
  assert.deepEqual(rig.held(), [me])

  // Direct traffic to the app throughout: every request is served, whatever the registry does.
  const load = steadyLoad(async () => {
    const res = await request(`${a.url}/work`)
    await res.body.dump()
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
    return null
  }, 10)
  t.after(() => load.stop())

  for (const fault of ['5xx', 'hang'] as const) {
    rig.proxy.fault = (req) => !instanceOnly(req) ? 'pass' : fault === 'hang' ? 'hang' : { status: 503, body: 'unavailable' }
    const started = Date.now()
    const res = await request(`${a.admin}/offline?wait=true`, { method: 'POST' })
    const took = Date.now() - started
    const body = await res.body.json() as { state: string, report: OfflineReport }
    assert.equal(body.state, 'offline', fault)
    assert.equal(body.report.deregisteredAt, null, `${fault}: never confirmed`)
    assert.equal(body.report.deregistration.state, 'unconfirmed', `${fault}: the report says so`)
    assert.ok(body.report.deregistration.attempts >= 2, `${fault}: retried (${body.report.deregistration.attempts} attempts)`)
    // No window has passed since a confirmation: serving and retrying until the shutdown budget's
    // bound (default: window + 5 s), not "offline" at start + window while still registered.
    assert.ok(took >= WINDOW_MS + SHUTDOWN_DEFAULTS.closeSlackMs, `${fault}: kept serving until the budget bound (${took} ms)`)
    assert.ok(body.report.problems.some((p) => /has not confirmed deregistration within the shutdown budget/.test(p.message)), `${fault}: reported in the offline report`)
    if (fault === '5xx') assert.match(body.report.problems[0]!.message, expect.error5xx)
    assert.ok(log.find(/lameduck: deregister .*failed/, 40).length > 0, `${fault}: logged at warn`)
    assert.deepEqual(rig.held(), [me], `${fault}: still registered while the registry fails`)

    // The registry recovers: the background retry removes the instance.
    rig.proxy.fault = () => 'pass'
    rig.proxy.release()
    await until(() => rig.held().length === 0, `${fault}: deregistered once the registry answers`, { timeoutMs: 10_000 })
    if (fault === 'hang') {
      const problems = (await status(a.admin)).problems
      assert.ok(problems.some((p) => expect.hang.test(p.message)), `a hung call is reported as such: ${JSON.stringify(problems.map((p) => p.message))}`)
    }
    // Online again for the next round (the registry answers now).
    const online = await request(`${a.admin}/online?wait=true`, { method: 'POST' })
    assert.equal(online.statusCode, 200)
    await online.body.dump()
    assert.deepEqual(rig.held(), [me])
  }
  await load.stop()
  assert.equal(load.stats.failed, 0, load.stats.errors.slice(0, 3).join(', '))
  assert.ok(load.stats.ok > 100)
  assert.equal(a.app.lameduck.state, 'serving')
}

test('Eureka answering 5xx or hanging: registration retried, /offline waits its full window, removed once Eureka answers', async (t) => {
  await scenario(t, await eurekaRig(), { error5xx: /answered 50\d|50\d/, hang: /ESOCKETTIMEDOUT|ETIMEDOUT|timed? ?out|did not answer/i })
})

test('Nacos answering 5xx or hanging: registration retried, /offline waits its full window, removed once Nacos answers', async (t) => {
  await scenario(t, await nacosRig(), { error5xx: /failed to req API/, hang: /failed to req API|timeout|socket hang up|ECONNRESET/i })
})
