// A Eureka server that is down or goes away, seen end to end: providers with the
// plugin and the Eureka adapter, a consumer on eurekaDiscovery + the balancer
// under steady load. Each case: no request lost, the failure in the logs and
// /status, and the right final state in the lifecycle and in the registry.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { createBalancer } from '@lameduck/balancer'
import { startEureka, type EurekaServer } from '@lameduck/devkit'
import { eurekaDiscovery, eurekaRegistry } from '@lameduck/eureka'
import { gate } from '@lameduck/test-utils'
import { faultProxy, loggedProvider, memoryLog, status, steadyLoad, until, waitState, type LoggedProvider } from './helpers.ts'

const WINDOW = { serverCacheMs: 100, clientFetchMs: 100, balancerRefreshMs: 100, marginMs: 500 } // 800 ms

/** A provider on the Eureka adapter; the adapter logs into the provider's log too. */
function eurekaProvider (id: string, url: string, heartbeatMs = 100): Promise<LoggedProvider> {
  const log = memoryLog()
  const registry = eurekaRegistry({ url, logger: log.logger, client: { eureka: { heartbeatInterval: heartbeatMs, maxRetries: 0 } }, registerTimeoutMs: 1_000, requestTimeoutMs: 500, backoff: { initialMs: 50, maxMs: 200 } })
  return loggedProvider(id, { registry, windows: WINDOW }, log)
}

/** A consumer on eurekaDiscovery + the balancer; the load starts once it sees `instances` providers. */
async function consumer (url: string, instances: number) {
  const log = memoryLog()
  const discovery = eurekaDiscovery({ url, logger: log.logger, requestTimeoutMs: 500, client: { eureka: { registryFetchInterval: 100, maxRetries: 0 } } })
  const balancer = createBalancer({ service: 'orders', discovery, refreshIntervalMs: 100, logger: log.logger })
  await until(() => balancer.stats().services[0]!.available === instances, `the consumer to see ${instances} instance(s)`)
  const load = steadyLoad(async () => {
    const res = await request('http://orders/work', { dispatcher: balancer })
    await res.body.dump()
    if (res.statusCode !== 200) throw Object.assign(new Error(`status ${res.statusCode}`), { code: `HTTP_${res.statusCode}` })
    return String(res.headers['x-instance'])
  }, 5)
  return { discovery, balancer, load, log, async close () { await load.stop(); await balancer.close(); await discovery.close() } }
}

const states = (p: LoggedProvider): string[] => p.log.lines.filter((l) => (l.lameduck as { to?: string } | undefined)?.to !== undefined).map((l) => (l.lameduck as { to: string }).to)

test('Eureka down at start: unready and retrying (logged), registered once Eureka is up, then routed to', async (t) => {
  // Down: the address resets every connection until Eureka is up behind it.
  const down = await gate()
  const a = await eurekaProvider('a', down.url('/eureka'))
  const servers: EurekaServer[] = []
  t.after(async () => { await a.app.close(); for (const s of servers) await s.close(); await down.close() })

  await until(async () => (await status(a.admin)).problems.length >= 2, 'two failed registrations')
  assert.equal(a.app.lameduck.state, 'registering')
  assert.equal((await request(`${a.url}/health/ready`)).statusCode, 503, 'not ready while unregistered')
  const direct = await request(`${a.url}/work`)
  assert.equal(direct.statusCode, 200, 'the app itself serves all along')
  await direct.body.dump()
  const first = (await status(a.admin)).problems[0]!
  assert.match(first.step, /^register \(attempt 1, next in \d+ ms\)$/)
  assert.match(first.message, /ECONNRESET|socket hang up/)
  assert.ok(a.log.find(/lameduck: register \(attempt 1, next in \d+ ms\) failed: .*(ECONNRESET|socket hang up)/, 40).length === 1, 'logged at warn')

  const upAt = Date.now()
  const server = await startEureka({ responseCacheUpdateIntervalMs: 100 })
  servers.push(server)
  down.open(server.port)
  await waitState(a.app, 'serving', 10_000)
  const held = server.snapshot()
  assert.deepEqual(held.map((i) => i.id), ['a'])
  assert.ok(Number(held[0]!.metadata['lameduck.registeredAt']) >= upAt, 'registeredAt is when registration succeeded, not when the app started')
  assert.equal((await request(`${a.url}/health/ready`)).statusCode, 200)

  const c = await consumer(server.url, 1)
  t.after(() => c.close())
  await until(() => c.load.stats.ok >= 20, 'the consumer to reach a')
  await c.load.stop()
  assert.equal(c.load.stats.failed, 0, c.load.stats.errors.join(', '))
  assert.deepEqual([...c.load.stats.byInstance.keys()], ['a'])
  assert.deepEqual(states(a), ['waiting', 'registering', 'serving'])
})

test('Eureka flaps while serving (refused, then 503s): consumers keep their last list, providers stay serving; nothing lost', async (t) => {
  const server = await startEureka({ responseCacheUpdateIntervalMs: 100 })
  let proxy = await faultProxy(`http://127.0.0.1:${server.port}`)
  const port = proxy.port
  const url = `${proxy.url}/eureka`
  const a = await eurekaProvider('a', url)
  const b = await eurekaProvider('b', url)
  t.after(async () => { await a.app.close(); await b.app.close(); await proxy.close(); await server.close() })
  await Promise.all([waitState(a.app, 'serving'), waitState(b.app, 'serving')])
  const c = await consumer(url, 2)
  t.after(() => c.close())
  await until(() => (c.load.stats.byInstance.get('a') ?? 0) > 10 && (c.load.stats.byInstance.get('b') ?? 0) > 10, 'traffic on both')

  const outage = async (round: number, down: () => Promise<void>, up: () => Promise<void>): Promise<void> => {
    await down()
    const okAtDown = c.load.stats.ok
    await until(() => a.log.find(/heartbeat for ORDERS\/a failed/, 40).length >= round && b.log.find(/heartbeat for ORDERS\/b failed/, 40).length >= round, `failed heartbeats logged (outage ${round})`)
    await until(() => c.log.find(/registry fetch failed .* the last fetched list stays in use/, 40).length >= round, `the consumer's failed fetch logged (outage ${round})`)
    await until(() => c.load.stats.ok >= okAtDown + 100, 'requests keep flowing while Eureka is unreachable')
    await up()
    await until(() => a.log.find(/heartbeats for ORDERS\/a succeed again/).length >= round, `heartbeats back (outage ${round})`)
    await until(() => c.log.find(/registry fetches succeed again/).length >= round, `fetches back (outage ${round})`)
  }
  // 1: the server's port refuses connections; 2: it answers 503 to everything.
  await outage(1, () => proxy.close(), async () => { proxy = await faultProxy(`http://127.0.0.1:${server.port}`, port) })
  await outage(2, async () => { proxy.fault = () => ({ status: 503, body: 'overloaded' }) }, async () => { proxy.fault = () => 'pass' })
  const okAtEnd = c.load.stats.ok
  await until(() => c.load.stats.ok >= okAtEnd + 50, 'requests after the outages')
  await c.load.stop()
  assert.equal(c.load.stats.failed, 0, c.load.stats.errors.slice(0, 5).join(', '))
  assert.deepEqual(server.snapshot().map((i) => i.id).sort(), ['a', 'b'])
  for (const p of [a, b]) {
    assert.equal(p.app.lameduck.state, 'serving')
    assert.deepEqual(states(p), ['waiting', 'registering', 'serving'], 'an unreachable registry is not a lifecycle event')
  }
})

test('Eureka restarted (its registry lost): providers find out by heartbeat and register again, with their metadata', async (t) => {
  let server = await startEureka({ responseCacheUpdateIntervalMs: 100 })
  const port = server.port // a restart comes back on its own port
  const a = await eurekaProvider('a', server.url)
  t.after(async () => { await a.app.close(); await server.close() })
  await waitState(a.app, 'serving')
  const registeredAt = server.snapshot()[0]!.metadata['lameduck.registeredAt']
  for (let round = 1; round <= 2; round++) {
    await server.close()
    await until(() => a.log.find(/heartbeat for ORDERS\/a failed/, 40).length >= round, `a failed heartbeat logged (round ${round})`)
    server = await startEureka({ port, responseCacheUpdateIntervalMs: 100 })
    await until(() => server.snapshot().length === 1, `re-registered (round ${round})`)
    assert.ok(a.log.find(/heartbeat for ORDERS\/a got 404; re-registering/, 40).length >= round)
    assert.equal(server.snapshot()[0]!.metadata['lameduck.registeredAt'], registeredAt, 'the same registration, not a new instance to ramp')
  }
  assert.equal(a.app.lameduck.state, 'serving')
  assert.deepEqual(states(a), ['waiting', 'registering', 'serving'])
})

// A restarted single Eureka answers an empty registry until the providers heartbeat
// again (30 s in production); the balancer's emptyListProtection keeps the last list.
test('consumers lose nothing across a Eureka restart', async (t) => {
  let server = await startEureka({ responseCacheUpdateIntervalMs: 100 })
  const port = server.port // a restart comes back on its own port
  // Heartbeats slower than the consumer's fetch, as in production (30 s each): the consumer sees the empty registry.
  const a = await eurekaProvider('a', server.url, 1_500)
  t.after(async () => { await a.app.close(); await server.close() })
  await waitState(a.app, 'serving')
  const c = await consumer(server.url, 1)
  t.after(() => c.close())
  await until(() => c.load.stats.ok > 20, 'traffic')
  await server.close()
  server = await startEureka({ port, responseCacheUpdateIntervalMs: 100 })
  await until(() => server.snapshot().length === 1, 're-registered', { timeoutMs: 5_000 })
  const ok = c.load.stats.ok
  await until(() => c.load.stats.ok >= ok + 50, 'requests after the restart')
  await c.load.stop()
  assert.equal(c.load.stats.failed, 0, `${c.load.stats.failed} failed: ${[...new Set(c.load.stats.errors)].join(', ')}`)
})

test('Eureka unreachable at /offline: retries are reported, the window still runs in full; once back, a is removed for good', async (t) => {
  const server = await startEureka({ responseCacheUpdateIntervalMs: 100 })
  let proxy = await faultProxy(`http://127.0.0.1:${server.port}`)
  const port = proxy.port
  const url = `${proxy.url}/eureka`
  const a = await eurekaProvider('a', url)
  const b = await eurekaProvider('b', url)
  t.after(async () => { await a.app.close(); await b.app.close(); await proxy.close(); await server.close() })
  await Promise.all([waitState(a.app, 'serving'), waitState(b.app, 'serving')])
  const c = await consumer(url, 2)
  t.after(() => c.close())
  await until(() => (c.load.stats.byInstance.get('a') ?? 0) > 10 && (c.load.stats.byInstance.get('b') ?? 0) > 10, 'traffic on both')

  await proxy.close()
  const started = Date.now()
  const res = await request(`${a.admin}/offline?wait=true`, { method: 'POST' })
  const took = Date.now() - started
  assert.equal(res.statusCode, 200)
  const body = await res.body.json() as { state: string, report: { outcome: string, deregisteredAt: number | null, windowMs: number, problems: Array<{ step: string, message: string }> } }
  assert.equal(body.state, 'offline')
  assert.equal(body.report.outcome, 'offline')
  assert.equal(body.report.deregisteredAt, null, 'Eureka never confirmed')
  assert.ok(took >= body.report.windowMs, `the full ${body.report.windowMs} ms window, from /offline (${took} ms)`)
  assert.match(body.report.problems[0]!.step, /^deregister \(attempt 1, next in \d+ ms\)$/)
  assert.match(body.report.problems[0]!.message, /ECONNREFUSED/)
  assert.ok(body.report.problems.some((p) => /has not confirmed deregistration within the shutdown budget/.test(p.message)))
  assert.equal((body.report as { deregistration?: { state: string } }).deregistration?.state, 'unconfirmed', 'the report says the deregistration was not confirmed')
  assert.equal(a.log.find(/lameduck: deregister failed: the registry has not confirmed deregistration/, 40).length, 1, 'logged at warn')
  assert.ok((await status(a.admin)).problems.some((p) => p.step.startsWith('deregister (attempt')), '/status lists the failures')
  assert.deepEqual(server.snapshot().map((i) => i.id).sort(), ['a', 'b'], 'still registered while Eureka was unreachable')

  // Eureka reachable again: a's background retry removes it, and no heartbeat brings it back.
  let deregistered = false
  a.app.lameduck.on('deregistered', () => { deregistered = true })
  proxy = await faultProxy(`http://127.0.0.1:${server.port}`, port)
  await until(() => deregistered, 'the background deregistration to succeed once Eureka is back', { timeoutMs: 10_000 })
  assert.deepEqual(server.snapshot().map((i) => i.id), ['b'])
  const okNow = c.load.stats.ok
  await until(() => c.load.stats.ok >= okNow + 50, 'more requests')
  await c.load.stop()
  assert.deepEqual(server.snapshot().map((i) => i.id), ['b'], 'a was not re-registered by a heartbeat')
  assert.equal(c.load.stats.failed, 0, c.load.stats.errors.slice(0, 5).join(', '))
  assert.equal(a.app.lameduck.state, 'offline')
})
