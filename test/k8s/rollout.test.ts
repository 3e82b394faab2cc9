// The rollout lab on a real API server (issue 26, item 4): 3 providers rolled v1 → v2 under load; the
// consumer discovers them from the EndpointSlices the real kube-controller-manager writes. lameduck
// providers lose nothing, behind @lameduck/balancer or a plain round robin on kubernetesDiscovery(); naive
// providers (close on SIGTERM) lose requests to the plain consumer: the negative control.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { RolloutReport } from '@lameduck/devkit'
import { skipReason, startControlPlane, type ControlPlane } from './helpers/control-plane.ts'
import { runKubernetesRollout } from './rollout/run.ts'
import { assertLoadRan, lossDetail } from '../lab-checks.ts'

const reason = skipReason()
const log = process.env.LAMEDUCK_DEBUG ? (line: string): void => { process.stderr.write(`${line}\n`) } : undefined

function served (r: RolloutReport): void {
  assertLoadRan(r)
  for (const i of r.instances.filter((i) => i.version === 'v1')) assert.ok(i.requests > 0, `${i.id} served through the consumer`)
  assert.equal(r.offline.length, 3, 'the three v1 pods were deleted')
  assert.deepEqual(r.offline.filter((o) => o.killed).map((o) => o.id), [], 'no pod was SIGKILLed')
}

describe('the rollout lab on the kubernetes path of a real API server', { skip: reason ?? false }, () => {
  let cp: ControlPlane
  before(async () => { cp = await startControlPlane() }, { timeout: 120_000 })
  after(async () => { await cp?.stop() })

  test('lameduck providers, @lameduck/balancer on kubernetesDiscovery(): 0 lost, every pod seen through real EndpointSlices', async () => {
    const { report, stats } = await runKubernetesRollout(cp, { mode: 'lameduck', consumer: 'balancer', ...(log ? { log } : {}) })
    served(report)
    assert.equal(report.failed, 0, lossDetail(report))
    assert.equal(stats.created, 6, 'three v1 and three v2 pods made Ready through the API')
    assert.equal(stats.deleted, 3, 'the three v1 pods DELETEd through the API')
    assert.ok(stats.events() >= 9, `the consumer read the controller's slice updates (${stats.events()} watch events)`)
  })

  // A plain round-robin consumer on the same discovery: lameduck providers lose nothing to it either, naive
  // ones do in every run (the balancer's retry of refused connects hides most of a naive provider's loss:
  // 0-2 per run in the table, so it is no control).
  test('a plain round-robin consumer on kubernetesDiscovery(): lameduck providers lose 0; naive providers (close on SIGTERM) lose requests — the negative control', async () => {
    const lameduck = await runKubernetesRollout(cp, { mode: 'lameduck', consumer: 'plain', ...(log ? { log } : {}) })
    served(lameduck.report)
    assert.equal(lameduck.report.failed, 0, `failed: ${JSON.stringify(lameduck.report.failures)}`)
    const { report } = await runKubernetesRollout(cp, { mode: 'naive', consumer: 'plain', ...(log ? { log } : {}) })
    served(report)
    assert.ok(report.failed > 0, `naive lost requests: ${JSON.stringify(report.failures)}`)
    assert.ok(report.failures.refused > 0, 'the consumer called pods that had closed')
  })
})
