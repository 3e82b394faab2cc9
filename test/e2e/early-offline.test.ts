// earlyOffline: with only lameduck-aware consumers, draining ends once every one
// of them was told; one plain client keeps the full window.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { memoryRegistry } from '@lameduck/core'
import { createBalancer } from '@lameduck/balancer'
import { startProvider, steadyLoad, until } from '../helpers.ts'

test('earlyOffline with only balancer consumers: offline within ~1 s + quiet period of a 30 s window, zero failures', async (t) => {
  // Discovery lags 30 s behind the registry: only the in-band signal can end the drain early.
  const registry = memoryRegistry({ propagationDelayMs: 30_000 })
  const options = { registry, windows: { clientFetchMs: 30_000 }, earlyOffline: { quietMs: 500 }, shutdownTimeoutMs: 60_000 }
  const a = await startProvider('a', options)
  const b = await startProvider('b', options)
  t.after(() => Promise.all([a.app.close(), b.app.close()]))
  // The registry's own view is visible to the balancers through a second, undelayed discovery.
  const discovery = { instances: () => registry.registered('orders'), subscribe: () => () => {} }
  const balancers = [1, 2, 3].map((n) => createBalancer({ service: 'orders', discovery, refreshIntervalMs: 0, consumerId: `consumer-${n}` }))
  t.after(() => Promise.all(balancers.map((x) => x.close())))
  let i = 0
  const load = steadyLoad(async () => {
    const res = await request('http://orders/work', { dispatcher: balancers[i++ % balancers.length]!, method: i % 3 === 0 ? 'POST' : 'GET', body: i % 3 === 0 ? 'x' : null, headers: { 'content-type': 'text/plain' } })
    await res.body.dump()
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
    return String(res.headers['x-instance'])
  }, 5)
  await until(() => (load.stats.byInstance.get('a') ?? 0) > 20 && (load.stats.byInstance.get('b') ?? 0) > 20, 'traffic on both')

  const started = Date.now()
  const res = await request(`${a.admin}/offline?wait=true`, { method: 'POST' })
  const body = await res.body.json() as { state: string, report: { endedEarly: boolean, totalMs: number } }
  const offlineAt = Date.now()
  await load.stop()
  assert.equal(body.state, 'offline')
  // Ended by the consumers' acknowledgements, not by the clock: the 30 s window never ran out.
  assert.equal(body.report.endedEarly, true)
  assert.ok(body.report.totalMs < options.windows.clientFetchMs, `offline after ${body.report.totalMs} ms, before the ${options.windows.clientFetchMs} ms window`)
  assert.ok(offlineAt - started >= options.earlyOffline.quietMs, 'the quiet period ran in full')
  assert.equal(load.stats.failed, 0, `failures: ${load.stats.errors.join(', ')}`)
  assert.ok(load.stats.lastAt.get('a')! <= offlineAt, 'the consumers stopped routing to a before it went offline')
})

test('earlyOffline with one plain client in the mix keeps the full window', async (t) => {
  const registry = memoryRegistry()
  const windowMs = 2_000
  const a = await startProvider('a', { registry, windows: { clientFetchMs: windowMs }, earlyOffline: { quietMs: 200 } })
  const b = await startProvider('b', { registry, windows: { clientFetchMs: windowMs } })
  t.after(() => Promise.all([a.app.close(), b.app.close()]))
  const balancer = createBalancer({ service: 'orders', discovery: registry, refreshIntervalMs: 0 })
  t.after(() => balancer.close())
  const aware = steadyLoad(async () => { const r = await request('http://orders/work', { dispatcher: balancer }); await r.body.dump(); return String(r.headers['x-instance']) }, 20)
  // One plain client keeps calling a directly, without x-lameduck-consumer (it ignores the drain header).
  const plain = steadyLoad(async () => { const r = await request(`${a.url}/work`); await r.body.dump(); return 'a' }, 300)
  await new Promise((resolve) => setTimeout(resolve, 400))
  const started = Date.now()
  const res = await request(`${a.admin}/offline?wait=true`)
  const body = await res.body.json() as { report: { endedEarly: boolean, totalMs: number } }
  await aware.stop()
  await plain.stop()
  assert.equal(body.report.endedEarly, false)
  assert.ok(Date.now() - started >= windowMs, 'the full window was kept')
  assert.equal(aware.stats.failed, 0, aware.stats.errors.slice(0, 3).join(', '))
})
