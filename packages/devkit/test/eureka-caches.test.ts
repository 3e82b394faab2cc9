import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEureka, type EurekaServer } from '@lameduck/devkit'
import type { Clock } from '@lameduck/core'
import { ResponseCache } from '../src/eureka/response-cache.ts'
import { body, call } from './eureka-helpers.ts'

/** What GET /eureka/apps shows for orders/o1: its status, or null when absent. */
async function shown (s: EurekaServer): Promise<string | null> {
  const apps = (await call('GET', `${s.url}/apps/`)).json.applications.application as any[]
  const i = apps.flatMap((a) => a.instance).find((x: any) => x.instanceId === 'o1')
  return i?.status ?? null
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
      await call('GET', `${s.url}/apps/`) // the full fetch's key in the read-only cache
      let lastStaleSentAt = Date.now()
      await call('POST', `${s.url}/apps/orders`, { body: body('o1') })
      // The tick that publishes the registration came after the last poll that missed it was sent.
      for (;;) {
        const sentAt = Date.now()
        if (await shown(s) === 'UP') break
        lastStaleSentAt = sentAt
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      const changedAt = Date.now()
      await changes[change](s)
      let seenOld = 0
      while (await shown(s) === 'UP') {
        seenOld++
        // The next tick is at most one interval away, plus the timer's lateness on a busy machine.
        assert.ok(Date.now() < changedAt + interval + 1_000, 'the change must show by the next tick')
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      const visibleAt = Date.now()
      assert.ok(seenOld >= 1, 'the old payload is served right after the change')
      // Two ticks lie between the stale poll's send and this answer; ticks are at least an interval
      // apart (a fixed delay, as java.util.Timer: a late tick pushes the next one, never pulls it).
      assert.ok(visibleAt - lastStaleSentAt >= interval, `two ticks within ${visibleAt - lastStaleSentAt} ms, interval ${interval} ms`)
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

test('read-only cache timer: first tick at a multiple of the interval, then a fixed delay — a late tick pushes the next (java.util.Timer.schedule)', () => {
  let now = 1_000
  const timers: Array<{ fn: () => void, at: number }> = []
  const clock: Clock = { now: () => now, setTimeout: (fn, ms) => { const t = { fn, at: now + ms, unref: () => t }; timers.push(t); return t }, clearTimeout: () => {} }
  const cache = new ResponseCache({ clock, useReadOnlyCache: true, updateIntervalMs: 300, autoExpirationMs: 180_000, generate: () => '{}' })
  assert.deepEqual(timers.map((t) => t.at), [1_200], 'the first tick on the next multiple')
  now = 1_270 // the timer thread took the task 70 ms late (a busy machine)
  timers[0]!.fn()
  assert.equal(cache.refreshes, 1)
  assert.equal(timers[1]!.at, 1_570, 'the next tick an interval after the late one, not at the 1 500 multiple')
})
