// The rollout lab on the Eureka path: devkit Eureka (read-only cache), consumers
// on eureka-js-client + @lameduck/balancer, providers as child processes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { runRollout } from '@lameduck/devkit'

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
