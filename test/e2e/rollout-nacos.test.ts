// The rollout lab on the Nacos path: devkit Nacos (UDP push, cacheMillis),
// consumers on the nacos client + @lameduck/balancer.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { runRollout } from '@lameduck/devkit'

test('Nacos path: lameduck loses 0 of thousands; naive loses some', async () => {
  const lameduck = await runRollout({ registry: 'nacos', mode: 'lameduck', rps: 300 })
  assert.ok(lameduck.total >= 1_500, `thousands of requests (${lameduck.total})`)
  assert.equal(lameduck.failed, 0, JSON.stringify(lameduck.failureSamples.slice(0, 3)))
  for (const o of lameduck.offline) assert.equal(o.drain?.outcome, 'offline')
  const naive = await runRollout({ registry: 'nacos', mode: 'naive', rps: 300 })
  assert.ok(naive.failed > 0, 'the lab sees the loss of a naive rollout')
})
