import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEureka, type EurekaServer } from '@lameduck/devkit'
import { body, call } from './eureka-helpers.ts'

/** What GET /eureka/apps shows for orders/o1: its status, or null when absent. */
async function shown (s: EurekaServer): Promise<string | null> {
  const apps = (await call('GET', `${s.url}/apps/`)).json.applications.application as any[]
  const i = apps.flatMap((a) => a.instance).find((x: any) => x.instanceId === 'o1')
  return i?.status ?? null
}

/** Sleeps until just after the next read-only refresh tick (they fall on multiples of the interval). */
async function afterTick (intervalMs: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, intervalMs - (Date.now() % intervalMs) + 15))
}

const changes = {
  DELETE: (s: EurekaServer) => call('DELETE', `${s.url}/apps/orders/o1`),
  OUT_OF_SERVICE: (s: EurekaServer) => call('PUT', `${s.url}/apps/orders/o1/status?value=OUT_OF_SERVICE`)
}
const after = { DELETE: null, OUT_OF_SERVICE: 'OUT_OF_SERVICE' }

for (const change of ['DELETE', 'OUT_OF_SERVICE'] as const) {
  test(`${change}: GET /eureka/apps keeps the old payload until the read-only cache refreshes`, async () => {
    // A refresh period long enough never to tick: the test drives refreshes itself.
    const s = await startEureka({ responseCacheUpdateIntervalMs: 3_600_000 })
    try {
      await call('POST', `${s.url}/apps/orders`, { body: body('o1') })
      assert.equal(await shown(s), 'UP', 'first read fills the read-only cache from the registry')
      assert.equal((await changes[change](s)).status, 200)
      assert.equal(await shown(s), 'UP', 'still the old payload')
      assert.equal(await shown(s), 'UP', 'and again')
      s.refreshCache()
      assert.equal(await shown(s), after[change], 'the refresh publishes the change')
    } finally {
      await s.close()
    }
  })

  test(`${change}: with the timer, the change shows at the next tick (and not before)`, async () => {
    const interval = 300
    const s = await startEureka({ responseCacheUpdateIntervalMs: interval })
    try {
      await call('POST', `${s.url}/apps/orders`, { body: body('o1') })
      await afterTick(interval)
      assert.equal(await shown(s), 'UP')
      const changedAt = Date.now()
      await changes[change](s)
      const nextTick = (Math.floor(changedAt / interval) + 1) * interval
      let seenOld = 0
      while (await shown(s) === 'UP') {
        seenOld++
        assert.ok(Date.now() < nextTick + 200, 'the change must show by the next tick')
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      const visibleAt = Date.now()
      assert.ok(seenOld >= 1, 'the old payload is served right after the change')
      assert.ok(visibleAt >= nextTick - 5, `not visible before the tick (visible ${visibleAt - changedAt} ms after the change, tick at +${nextTick - changedAt} ms)`)
      assert.equal(await shown(s), after[change])
    } finally {
      await s.close()
    }
  })

  test(`${change}: with the read-only cache off, the change shows at once`, async () => {
    const s = await startEureka({ responseCacheUpdateIntervalMs: 3_600_000, useReadOnlyCache: false })
    try {
      await call('POST', `${s.url}/apps/orders`, { body: body('o1') })
      assert.equal(await shown(s), 'UP')
      await changes[change](s)
      assert.equal(await shown(s), after[change])
    } finally {
      await s.close()
    }
  })
}

test('per-app and delta GETs are served from the same caches', async () => {
  const s = await startEureka({ responseCacheUpdateIntervalMs: 3_600_000 })
  try {
    assert.equal((await call('GET', `${s.url}/apps/orders`)).status, 404, 'unknown app: cached as empty')
    await call('POST', `${s.url}/apps/orders`, { body: body('o1') })
    assert.equal((await call('GET', `${s.url}/apps/orders`)).status, 404, 'the cached "empty" answer stays until the refresh')
    assert.equal((await call('GET', `${s.url}/apps/orders/o1`)).status, 200, 'instance GETs read the registry directly')
    const before = (await call('GET', `${s.url}/apps/delta`)).json.applications
    s.refreshCache()
    assert.equal((await call('GET', `${s.url}/apps/orders`)).json.application.instance[0].instanceId, 'o1')
    await call('DELETE', `${s.url}/apps/orders/o1`)
    assert.deepEqual((await call('GET', `${s.url}/apps/delta`)).json.applications, before, 'delta: old payload until the refresh')
    s.refreshCache()
    const delta = (await call('GET', `${s.url}/apps/delta`)).json.applications
    assert.equal(delta.application[0].instance[0].actionType, 'DELETED')
  } finally {
    await s.close()
  }
})
