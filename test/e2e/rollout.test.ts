// The rolling-deploy lab in CI, scaled down: for each traffic path a lameduck
// rollout loses nothing out of thousands of requests, and a naive rollout of the
// same scenario loses some — so the lab provably sees loss. One file, so only one
// lab (6 provider processes, a registry, a consumer) runs at a time.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { runRollout } from '@lameduck/devkit'

test('Service path: a lameduck rollout loses 0 of thousands; naive loses some', async () => {
  const lameduck = await runRollout({ registry: 'none', mode: 'lameduck', rps: 300 })
  assert.ok(lameduck.total >= 1_500, `thousands of requests (${lameduck.total})`)
  assert.equal(lameduck.failed, 0, JSON.stringify(lameduck.failureSamples.slice(0, 3)))
  assert.equal(lameduck.offline.length, 3)
  for (const o of lameduck.offline) {
    assert.equal(o.killed, false)
    assert.equal(o.drain?.outcome, 'offline', 'each old pod drained to offline before exiting')
    assert.ok(o.offlineMs >= Number(o.windowMs), `${o.id} stayed up for its window (${o.offlineMs} ≥ ${o.windowMs} ms)`)
  }
  const naive = await runRollout({ registry: 'none', mode: 'naive', rps: 300 })
  assert.ok(naive.failed > 0, 'the lab sees the loss of a naive rollout')
  assert.ok(naive.failures.reset + naive.failures.status5xx + naive.failures.refused > 0)
})

test('a provider that ignores SIGTERM is SIGKILLed at the grace period and counted', async () => {
  const r = await runRollout({ registry: 'none', mode: 'naive', stubbornProvider: true, rps: 100, gracePeriodSeconds: 20, providers: 2, settleMs: 500 })
  const grace = 20 * 1000 * 0.05
  assert.equal(r.offline.length, 2)
  for (const o of r.offline) {
    assert.equal(o.killed, true, `${o.id} was SIGKILLed`)
    assert.ok(o.offlineMs >= grace && o.offlineMs < grace + 1_000, `killed at the grace period (${o.offlineMs} ms, grace ${grace} ms)`)
  }
  assert.equal(r.instances.filter((i) => i.killed).length, 2)
})

test('Eureka path: lameduck loses 0 of thousands and the warmup ramp tracks the curve; naive loses some', async () => {
  const lameduck = await runRollout({ registry: 'eureka', mode: 'lameduck', rps: 300, warmupMs: 3_000, maxSurge: 3, settleMs: 4_000 })
  assert.ok(lameduck.total >= 2_000, `thousands of requests (${lameduck.total})`)
  assert.equal(lameduck.failed, 0, JSON.stringify(lameduck.failureSamples.slice(0, 3)))
  for (const o of lameduck.offline) {
    assert.equal(o.killed, false)
    assert.equal(o.drain?.outcome, 'offline')
    // The balancer drops a leaving instance at its first draining response, long before the window ends.
    assert.ok(o.lastRequestAfterMs === null || o.lastRequestAfterMs < o.offlineMs, `${o.id}: last request before exit`)
  }
  assert.ok(lameduck.warmup !== null && lameduck.warmup.points.length >= 10, 'ramp points measured')
  assert.ok(lameduck.warmup.meanAbsoluteError < 0.05, `share within 5 % of the linear curve (MAE ${lameduck.warmup.meanAbsoluteError})`)

  const naive = await runRollout({ registry: 'eureka', mode: 'naive', rps: 300 })
  assert.ok(naive.failed > 0, 'the lab sees the loss of a naive rollout')
})

// With UDP push the registry hop is fast, and lameduck's balancer retries refused
// connects, which hides most of a naive rollout's loss; a plain consumer (round
// robin over the nacos client's list, no retries) shows it, and shows that lameduck
// providers alone protect consumers that know nothing of lameduck.
test('Nacos path, plain consumers: lameduck loses 0 of thousands; naive loses some', async () => {
  const lameduck = await runRollout({ registry: 'nacos', mode: 'lameduck', consumer: 'plain', rps: 300 })
  assert.ok(lameduck.total >= 1_500, `thousands of requests (${lameduck.total})`)
  assert.equal(lameduck.failed, 0, JSON.stringify(lameduck.failureSamples.slice(0, 3)))
  for (const o of lameduck.offline) assert.equal(o.drain?.outcome, 'offline')
  const naive = await runRollout({ registry: 'nacos', mode: 'naive', consumer: 'plain', rps: 300 })
  assert.ok(naive.failed > 0, 'the lab sees the loss of a naive rollout')
})

test('Eureka + Envoy sidecars: lameduck loses 0 of thousands; naive (sidecar drains at once) loses some', async () => {
  const lameduck = await runRollout({ registry: 'eureka', sidecar: true, mode: 'lameduck', rps: 300 })
  assert.ok(lameduck.total >= 2_000, `thousands of requests (${lameduck.total})`)
  assert.equal(lameduck.failed, 0, JSON.stringify(lameduck.failureSamples.slice(0, 3)))
  for (const o of lameduck.offline) {
    assert.equal(o.drain?.outcome, 'offline')
    assert.deepEqual(o.drain?.problems, [], 'the sidecar drain reported no problem')
  }
  const naive = await runRollout({ registry: 'eureka', sidecar: true, mode: 'naive', rps: 300 })
  assert.ok(naive.failed > 0, 'the lab sees the loss when the sidecar is not coordinated')
})
