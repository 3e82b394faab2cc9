// readinessWhileDraining: 'fail' (default) answers 503 on /health/ready from the
// start of the drain; 'serve' keeps 200 until the drain is over, for data planes
// that route to serving-terminating endpoints (single replica, externalTrafficPolicy: Local).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { request } from 'undici'
import { attach } from '@lameduck/node'
import { startServer, stop, until } from './helpers.ts'

async function ready (url: string): Promise<[number, unknown]> {
  const res = await request(`${url}/health/ready`)
  return [res.statusCode, await res.body.json()]
}

for (const policy of ['fail', 'serve'] as const) {
  test(`readinessWhileDraining '${policy}': /health/ready while serving, draining and offline; /status says the policy`, async (t) => {
    const s = await startServer({ readinessWhileDraining: policy, windows: { clientFetchMs: 60_000 } })
    t.after(() => stop(s))
    await until(() => s.lameduck.state === 'serving', 'serving')
    assert.equal((await ready(s.url))[0], 200)
    const offline = s.lameduck.offline()
    await until(() => s.lameduck.state === 'draining', 'draining')
    const [code, body] = await ready(s.url)
    assert.equal(code, policy === 'serve' ? 200 : 503, JSON.stringify(body))
    assert.equal((body as { state: string }).state, 'draining')
    assert.equal((s.lameduck.status() as { readinessWhileDraining: string }).readinessWhileDraining, policy)
    const admin = await (await request(`${s.admin}/status`)).body.json() as { readinessWhileDraining: string }
    assert.equal(admin.readinessWhileDraining, policy)
    await s.lameduck.online()
    await offline
  })
}

test('readinessWhileDraining \'serve\': 503 once the drain is over (offline)', async (t) => {
  const s = await startServer({ readinessWhileDraining: 'serve', windows: { clientFetchMs: 100 } })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  await s.lameduck.offline()
  assert.equal((await ready(s.url))[0], 503)
})

test('readinessWhileDraining: a wrong value is refused, naming the choices', async () => {
  await assert.rejects(attach(createServer(), { service: 'x', readinessWhileDraining: 'keep' as never, signals: false, admin: false }), /^InvalidOptionError: readinessWhileDraining: .*'fail'.*'serve'/)
})
