// The rollout lab on the Kubernetes Service path (kube-proxy with endpoint lag
// and conntrack): lameduck loses nothing, the naive rollout provably loses.
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
