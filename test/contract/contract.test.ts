// The contract every adapter keeps on every transport: delayed registration,
// ready/live, /offline keeps serving with the drain marks, in-flight requests
// complete, idle keep-alive connections are closed only when idle, /online, and
// the signal path. Each test names its adapter and transport.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { memoryRegistry, silentLogger } from '@lameduck/core'
import type { AttachOptions } from '@lameduck/node'
import { TRANSPORTS, transportClient } from '../../packages/node/test/transports.ts'
import { until } from '../helpers.ts'
import { ADAPTERS } from './adapters.ts'

const base = (registry = memoryRegistry()): AttachOptions => ({
  service: 'orders', host: '127.0.0.1', registry, warmupMs: 0, signals: false, admin: { port: 0 }, logger: silentLogger, windows: { clientFetchMs: 600 }
})

const h2 = (transport: string): boolean => transport === 'h2c' || transport === 'h2'

for (const adapter of ADAPTERS) {
  for (const transport of TRANSPORTS) {
    const name = `${adapter.name} × ${transport}`
    const skip = adapter.unsupported?.(transport) ?? false

    test(`${name}: delayed registration, ready/live, /offline then /online`, { skip }, async (t) => {
      const registry = memoryRegistry()
      let dbUp = false
      const app = await adapter.start(transport, { ...base(registry), delayMs: 100, readiness: [async () => dbUp], readinessTimeoutMs: 10_000 })
      t.after(() => app.close())
      const client = transportClient(transport, app.url)
      t.after(() => client.close())
      const waiting = await client.request('/health/ready')
      assert.equal(waiting.statusCode, 503, name)
      assert.equal(JSON.parse(waiting.body).state, 'waiting', name)
      assert.equal((await client.request('/health/live')).statusCode, 200, name)
      assert.equal(registry.registered('orders').length, 0, `${name}: not registered before ready`)
      dbUp = true
      await until(async () => (await client.request('/health/ready')).statusCode === 200, `${name}: ready`)
      assert.equal(registry.registered('orders').length, 1, `${name}: registered once ready`)

      const off = await request(`${app.lameduck.adminUrl}/offline?wait=true`)
      assert.equal(off.statusCode, 200, name)
      await off.body.dump()
      assert.equal(registry.registered('orders').length, 0, name)
      assert.equal((await client.request('/health/ready')).statusCode, 503, name)
      const on = await request(`${app.lameduck.adminUrl}/online?wait=true`)
      assert.equal(on.statusCode, 200, name)
      await on.body.dump()
      assert.equal(app.lameduck.state, 'serving', name)
      assert.equal(registry.registered('orders').length, 1, `${name}: registered again`)
    })

    test(`${name}: /offline keeps serving with the drain marks, in flight completes, the idle connection goes (its keep-alive runs out; HTTP/2: GOAWAY)`, { skip }, async (t) => {
      const app = await adapter.start(transport, { ...base(), maxRequestMs: 5_000 })
      t.after(() => app.close())
      await until(() => app.lameduck.state === 'serving', `${name}: serving`)
      const idle = transportClient(transport, app.url)
      const busy = transportClient(transport, app.url)
      const fresh = transportClient(transport, app.url)
      t.after(() => Promise.all([idle.close(), busy.close(), fresh.close()]))
      await idle.request('/hello')
      await busy.request('/hello')
      const inflight = busy.request('/slow?ms=1200') // through two idle sweeps and past the window
      await until(() => app.lameduck.lifecycle.inflight.count === 1, `${name}: in flight`)

      const res = await request(`${app.lameduck.adminUrl}/offline`, { method: 'POST' })
      assert.equal(res.statusCode, 202, name)
      await res.body.dump()
      const during = await fresh.request('/hello')
      assert.equal(during.statusCode, 200, `${name}: served while draining`)
      assert.equal(during.headers['x-lameduck-state'], 'draining', name)
      assert.equal(during.headers.connection, h2(transport) ? undefined : 'close', name)
      const slow = await inflight
      assert.equal(slow.statusCode, 200, `${name}: the request in flight completed`)
      assert.deepEqual(JSON.parse(slow.body), { path: '/slow' }, name)
      await until(() => idle.disconnects >= 1, `${name}: the idle connection to be closed`)
      await until(() => app.lameduck.state === 'offline', `${name}: offline`)
    })

    test(`${name}: the signal path drains, closes the app and terminates with 0`, { skip }, async (t) => {
      const codes: number[] = []
      const listeners = process.listenerCount('SIGWINCH')
      const app = await adapter.start(transport, { ...base(), signals: ['SIGWINCH'], terminate: (code) => { codes.push(code) } })
      t.after(() => app.close())
      await until(() => app.lameduck.state === 'serving', `${name}: serving`)
      const states: string[] = []
      app.lameduck.on('state', (c) => states.push(c.to))
      const client = transportClient(transport, app.url)
      t.after(() => client.close())
      const inflight = client.request('/slow?ms=300')
      await until(() => app.lameduck.lifecycle.inflight.count === 1, `${name}: in flight`)
      process.kill(process.pid, 'SIGWINCH')
      assert.equal((await inflight).statusCode, 200, `${name}: the request in flight completed`)
      await until(() => codes.length === 1, `${name}: terminate`)
      assert.deepEqual(codes, [0], name)
      assert.deepEqual(states, ['draining', 'offline', 'closing', 'stopped'], name)
      assert.equal(process.listenerCount('SIGWINCH'), listeners, `${name}: handlers removed`)
    })
  }
}
