// The rollout lab on real Nacos (test/real/rollout/path-nacos-real.ts): 3 lameduck providers,
// registered through @lameduck/nacos, rolled v1 → v2 under load from a Node consumer over
// @lameduck/nacos discovery (UDP push). lameduck loses nothing on 2.3.1 and 3.1.0; naive
// (deregister and exit on SIGTERM) loses requests — the negative control. No pod is SIGKILLed.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { RolloutReport } from '@lameduck/devkit'
import { realTestOptions } from './helpers/nacos-modern.ts'
import { runRealRollout } from './rollout/run.ts'
import { assertLoadRan, lossDetail } from '../lab-checks.ts'

const log = process.env.LAMEDUCK_DEBUG ? (line: string): void => { process.stderr.write(`${line}\n`) } : undefined

function served (r: RolloutReport): void {
  assertLoadRan(r)
  for (const i of r.instances.filter((i) => i.version === 'v1')) assert.ok(i.requests > 0, `${i.id} served through the consumer`)
  assert.equal(r.offline.length, 3, 'the three v1 pods were deleted')
  assert.deepEqual(r.offline.filter((o) => o.killed).map((o) => o.id), [], 'no pod was SIGKILLed')
}

test('nacos-real 3.1.0 × node: lameduck loses 0, naive loses requests', { ...realTestOptions(), timeout: 300_000 }, async () => {
  const lameduck = await runRealRollout({ registry: 'nacos-real', nacosVersion: '3.1.0', consumer: 'node', mode: 'lameduck', ...(log ? { log } : {}) })
  served(lameduck)
  assert.equal(lameduck.failed, 0, lossDetail(lameduck))
  for (const o of lameduck.offline) assert.ok((o.lastRequestAfterMs ?? 0) > 0, `${o.id} still got requests after deletion (the window was needed)`)
  const naive = await runRealRollout({ registry: 'nacos-real', nacosVersion: '3.1.0', consumer: 'node', mode: 'naive', ...(log ? { log } : {}) })
  served(naive)
  assert.ok(naive.failures.refused > 0, `the consumer called pods that were gone: ${JSON.stringify(naive.failures)}`)
})

test('nacos-real 2.3.1 × balancer: lameduck loses 0', { ...realTestOptions(), timeout: 300_000 }, async () => {
  const r = await runRealRollout({ registry: 'nacos-real', nacosVersion: '2.3.1', consumer: 'balancer', mode: 'lameduck', ...(log ? { log } : {}) })
  served(r)
  assert.equal(r.failed, 0, lossDetail(r))
})
