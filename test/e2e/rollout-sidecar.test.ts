// The rollout lab with a local Envoy in front of every provider (Istio-style
// classic sidecar): lameduck coordinates the sidecar drain after the window;
// the naive rollout, whose sidecar drains at SIGTERM, is the negative control.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { runRollout } from '@lameduck/devkit'

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
