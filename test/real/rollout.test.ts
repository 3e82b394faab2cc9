// 18.5: the rollout lab against the real Netflix Eureka server with a real Java consumer (Spring
// Cloud Eureka client + LoadBalancer), then with eureka-js-client: 2 providers rolled v1 → v2 under load (2 keep test:real short; the
// bench table runs 3). lameduck loses nothing;
// the same rollout without lameduck (naive: deregister and exit on SIGTERM) loses requests to the
// consumer's caches — the negative control. No pod may reach the grace period's SIGKILL.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { RolloutReport } from '@lameduck/devkit'
import { envoyBinary } from './helpers/envoy.ts'
import { runRealRollout } from './rollout/run.ts'
import { assertLoadRan, lossDetail } from '../lab-checks.ts'

const PROVIDERS = 2
const log = process.env.LAMEDUCK_DEBUG ? (line: string): void => { process.stderr.write(`${line}\n`) } : undefined

function served (r: RolloutReport): void {
  assertLoadRan(r)
  // v2 pods may join the consumer's caches only after the run ends (naive ends soon after the rollout).
  for (const i of r.instances.filter((i) => i.version === 'v1')) assert.ok(i.requests > 0, `${i.id} served through the consumer`)
  assert.equal(r.offline.length, PROVIDERS, 'every v1 pod was deleted')
  assert.deepEqual(r.offline.filter((o) => o.killed).map((o) => o.id), [], 'no pod was SIGKILLed')
}

test('eureka-real × spring: lameduck loses 0 requests while the old pods leave', async () => {
  const r = await runRealRollout({ registry: 'eureka-real', consumer: 'spring', mode: 'lameduck', providers: PROVIDERS, ...(log ? { log } : {}) })
  served(r)
  assert.equal(r.failed, 0, lossDetail(r))
  // The consumer's caches kept routing to each leaving pod after its deletion: the window was needed.
  for (const o of r.offline) assert.ok((o.lastRequestAfterMs ?? 0) > 0, `${o.id} still got requests after deletion`)
})

test('eureka-real × spring: naive (deregister and exit) loses requests — the negative control', async () => {
  const r = await runRealRollout({ registry: 'eureka-real', consumer: 'spring', mode: 'naive', providers: PROVIDERS, ...(log ? { log } : {}) })
  served(r)
  assert.ok(r.failed > 0, 'naive lost requests')
  assert.ok(r.failures.refused > 0, `the Java consumer called pods that were gone: ${JSON.stringify(r.failures)}`)
})

// The same on the Node side: the unmodified eureka-js-client, round robin over its cache, no retries,
// and every provider behind a real Envoy 1.40.0 sidecar (`--sidecar envoy-real`): the providers
// register Envoy's inbound port through Envoy's outbound listener, and drain it after the window.
test('eureka-real × node (eureka-js-client), real Envoy sidecars: lameduck loses 0, naive loses requests', async () => {
  process.env.LAMEDUCK_ENVOY_BIN ??= envoyBinary()
  const lameduck = await runRealRollout({ registry: 'eureka-real', consumer: 'node', mode: 'lameduck', sidecar: 'envoy-real', providers: PROVIDERS, ...(log ? { log } : {}) })
  served(lameduck)
  assert.equal(lameduck.scenario.sidecar, 'envoy-real')
  assert.equal(lameduck.failed, 0, lossDetail(lameduck))
  for (const o of lameduck.offline) assert.ok(Number(o.drain?.sidecarMs) > 0, `${o.id} ran the sidecar phase`)
  const naive = await runRealRollout({ registry: 'eureka-real', consumer: 'node', mode: 'naive', sidecar: 'envoy-real', providers: PROVIDERS, ...(log ? { log } : {}) })
  served(naive)
  assert.ok(naive.failed > 0, `eureka-js-client called pods that were gone, or whose Envoy had no app behind it: ${JSON.stringify(naive.failures)}`)
})
