// The rollout lab with gRPC behind real Envoy sidecars (`lameduck-devkit rollout --transport grpc
// --sidecar envoy-real`): every provider a grpc-js server behind the real Envoy 1.40.0 binary (the
// devkit's Istio-shaped bootstrap: the inbound listener takes h2c from the consumer, its cluster
// speaks HTTP/2 to the app; the app's registry calls through the outbound listener), on the devkit's
// Eureka and Nacos stand-ins (and the Service path), under load from real grpc-js clients (a channel per registry address, round robin,
// no lameduck on the consumer side). The provider advertises its sidecar's inbound port; in mode
// lameduck attachGrpc drains its Envoy through the engine's sidecar option (drain_listeners, then the
// request gauges). lameduck loses no call and no pod is SIGKILLed; naive providers (deregister and
// tryShutdown() on SIGTERM) behind the same Envoy lose calls — the negative control.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { runRollout, type RolloutOptions, type RolloutReport } from '@lameduck/devkit'
import { envoyBinary } from './helpers/envoy.ts'
import { assertDrainedUnderLoad, assertLoadRan, lossDetail } from '../lab-checks.ts'

const log = process.env.LAMEDUCK_DEBUG ? (line: string): void => { process.stderr.write(`${line}\n`) } : undefined

// Short and scaled: 2 providers, periods × 0.03 (Istio's 45 s drain time → Envoy's --drain-time-s 1).
const small: RolloutOptions = { registry: 'eureka', transport: 'grpc', sidecar: 'envoy-real', consumer: 'plain', providers: 2, rps: 200, settleMs: 800, scale: 0.03, ...(log ? { log } : {}) }

test.before(() => { process.env.LAMEDUCK_ENVOY_BIN ??= envoyBinary() })

const failures = (r: RolloutReport): string => lossDetail(r)

function servedThroughEnvoy (r: RolloutReport): void {
  assert.equal(r.scenario.transport, 'grpc')
  assert.equal(r.scenario.sidecar, 'envoy-real')
  // A naive pod exits right after its deletion: only the lameduck drains take long enough to meet calls.
  if (r.scenario.mode === 'naive') assertLoadRan(r)
  else assertDrainedUnderLoad(r)
  // The replies name the provider: each v1 pod answered through its Envoy before it was deleted.
  for (const i of r.instances.filter((i) => i.version === 'v1')) assert.ok(i.requests > 0, `${i.id} served calls`)
  assert.equal(r.offline.length, 2, 'both v1 pods were deleted')
}

// The Service path behind the same Envoy: the consumer's channels stay pinned to a pod's Envoy until its
// drain_listeners tells them to go, so calls still flow through Envoy when the window ends. A GOAWAY from the
// app at the window's end (grpc-js drain(): last-stream-id = the last stream processed) refused the streams
// Envoy had already sent upstream, which Envoy does not retry under Istio's inbound retry_on
// (reset-before-request): UNAVAILABLE "remote refused stream reset", 2–8 calls per run, each at a pod's window
// end. attachGrpc with a sidecar now leaves that GOAWAY to the close, after the sidecar drained and the calls
// ended. Negative control: with the window GOAWAY put back (packages/grpc/src/transport.ts goingAway) this
// test loses those calls again (docs/benchmarks.md ⁵ has the runs).
test('Service + gRPC behind real Envoy sidecars: lameduck loses 0 calls', { timeout: 120_000 }, async () => {
  const r = await runRollout({ ...small, registry: 'none', mode: 'lameduck' })
  servedThroughEnvoy(r)
  assert.equal(r.failed, 0, `failed: ${failures(r)}`)
})

// On the registries (the devkit's Eureka; Nacos with push on: the provider registers its sidecar's
// port, the plain consumers follow the pushes), lameduck drains each pod's Envoy after the window.
for (const registry of ['eureka', 'nacos'] as const) {
  test(`${registry} + gRPC behind real Envoy sidecars: lameduck loses 0 calls, no SIGKILL; naive providers behind the same Envoy lose calls`, { timeout: 180_000 }, async () => {
    const lameduck = await runRollout({ ...small, registry, mode: 'lameduck' })
    servedThroughEnvoy(lameduck)
    assert.equal(lameduck.failed, 0, `failed: ${failures(lameduck)}`)
    for (const o of lameduck.offline) {
      assert.equal(o.killed, false, `${o.id} was not SIGKILLed`)
      assert.equal(o.drain?.outcome, 'offline')
      assert.ok(Number(o.drain?.sidecarMs) > 0, `${o.id} ran the sidecar phase`)
    }

    const naive = await runRollout({ ...small, registry, mode: 'naive' })
    servedThroughEnvoy(naive)
    assert.ok(naive.failed > 0, `naive providers behind Envoy lost nothing: ${failures(naive)}`)
  })
}
