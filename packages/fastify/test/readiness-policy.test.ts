// The readiness policy reaches the plugin's own /health/ready route.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import Fastify from 'fastify'
import { memoryRegistry } from '@lameduck/core'
import lameduck from '@lameduck/fastify'
import { until } from '@lameduck/test-utils'

async function ready (url: string): Promise<[number, unknown]> {
  const res = await request(`${url}/health/ready`)
  return [res.statusCode, await res.body.json()]
}

test('the Fastify plugin takes the policy: its /health/ready route answers 200 while draining with \'serve\'', async (t) => {
  const app = Fastify()
  t.after(() => app.close())
  await app.register(lameduck, { service: 'orders', host: '127.0.0.1', registry: memoryRegistry(), readinessWhileDraining: 'serve', windows: { clientFetchMs: 60_000 }, warmupMs: 0, signals: false, admin: false })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  await until(() => app.lameduck.state === 'serving', 'serving')
  const offline = app.lameduck.offline()
  await until(() => app.lameduck.state === 'draining', 'draining')
  assert.equal((await ready(url))[0], 200)
  await app.lameduck.online()
  await offline
})
