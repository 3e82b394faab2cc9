import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { startApp, until } from './helpers.ts'

test('/health/ready is 503 before the delay and while a readiness check fails; registers only then, with metadata', async (t) => {
  let dbUp = false
  const t0 = Date.now()
  const { app, registry, url } = await startApp({ delayMs: 300, readiness: [async () => dbUp], readinessTimeoutMs: 10_000, warmupMs: 120_000, weight: 40 })
  t.after(() => app.close())

  const before = await request(`${url}/health/ready`)
  assert.equal(before.statusCode, 503)
  assert.deepEqual(await before.body.json(), { state: 'waiting' })
  assert.equal(registry.registered('orders').length, 0)

  // After the delay the check still fails: still not ready, not registered.
  await until(() => Date.now() - t0 > 450, 'the delay to pass')
  assert.equal((await request(`${url}/health/ready`)).statusCode, 503)
  assert.equal(registry.registered('orders').length, 0)
  assert.equal(app.lameduck.status().readiness && (app.lameduck.status().readiness as { passing: boolean }).passing, false)

  const flipped = Date.now()
  dbUp = true
  await until(async () => (await request(`${url}/health/ready`)).statusCode === 200, '/health/ready to turn 200')
  const [instance] = registry.registered('orders')
  assert.ok(instance, 'registered once ready')
  assert.equal(instance.host, '127.0.0.1')
  assert.equal(instance.port, Number(new URL(url).port))
  const registeredAt = Number(instance.metadata['lameduck.registeredAt'])
  assert.ok(registeredAt >= flipped, 'registeredAt is when registration succeeded, not process start')
  assert.equal(instance.metadata['lameduck.warmup'], '120000')
  assert.equal(instance.metadata['lameduck.weight'], '40')
  assert.equal(instance.metadata.timestamp, String(registeredAt))
  assert.equal(instance.metadata.warmup, '120000')
  assert.equal(instance.metadata.weight, '40')
  const ready = await (await request(`${url}/health/ready`)).body.json() as { state: string, warming: boolean }
  assert.deepEqual(ready, { state: 'serving', warming: true })
  assert.equal((await request(`${url}/health/live`)).statusCode, 200)
})

test('a readiness check that never passes fails startup at the timeout: /health/live turns 503', async (t) => {
  const { app, registry, url } = await startApp({ readiness: [() => { throw new Error('db down') }], readinessTimeoutMs: 300 })
  t.after(() => app.close())
  await until(async () => (await request(`${url}/health/live`)).statusCode === 503, '/health/live to turn 503')
  // The public port says only the state; the detail is on the admin /status (it can carry a secret).
  assert.deepEqual(await (await request(`${url}/health/live`)).body.json(), { state: 'waiting', error: 'startup failed' })
  assert.match(app.lameduck.status().broken as string, /readiness checks \(last failure: readiness\[0\] threw: db down\) did not complete within 300 ms/)
  assert.equal(registry.registered('orders').length, 0)
  assert.equal((await request(`${url}/health/ready`)).statusCode, 503)
})
