// The rollout lab with real Envoy sidecars (`lameduck-devkit rollout --sidecar envoy-real`): each
// provider behind the real Envoy 1.40.0 binary with the devkit's Istio-shaped bootstrap (inbound
// listener in front of the app, the app's registry calls through the outbound one, Istio's stats
// matcher, admin on 127.0.0.1), terminated as pilot-agent does, on the devkit's Eureka server.
// The app drains its Envoy through the engine's sidecar option (@lameduck/envoy). lameduck loses
// nothing and no pod is SIGKILLed. The real Eureka server with real Envoy sidecars runs in
// rollout.test.ts (the node consumer's pair, whose naive run is the negative control for both).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { runRollout, type RolloutOptions, type RolloutReport } from '@lameduck/devkit'
import { envoyBinary } from './helpers/envoy.ts'
import { assertDrainedUnderLoad, lossDetail } from '../lab-checks.ts'

const log = process.env.LAMEDUCK_DEBUG ? (line: string): void => { process.stderr.write(`${line}\n`) } : undefined

// Short and scaled: 2 providers, periods × 0.03 (Istio's 45 s drain time → Envoy's --drain-time-s 1).
const small: RolloutOptions = { registry: 'eureka', sidecar: 'envoy-real', consumer: 'plain', providers: 2, rps: 200, settleMs: 800, scale: 0.03, ...(log ? { log } : {}) }

test.before(() => { process.env.LAMEDUCK_ENVOY_BIN ??= envoyBinary() })

function problemsOf (r: RolloutReport): string[][] {
  return r.offline.map((o) => (o.drain?.problems as Array<{ message: string }>).map((p) => /^active connections unavailable/.test(p.message) ? 'unavailable' : p.message))
}

// Istio's default (EXIT_ON_ZERO_ACTIVE_CONNECTIONS off) here; the bench table (envoy-rollout-table.ts) runs both.
for (const exitOnZeroActiveConnections of [false]) {
  test(`eureka + real Envoy sidecars, EXIT_ON_ZERO_ACTIVE_CONNECTIONS ${exitOnZeroActiveConnections ? 'on' : 'off'}: lameduck loses 0, no SIGKILL`, { timeout: 120_000 }, async () => {
    const r = await runRollout({ ...small, exitOnZeroActiveConnections, mode: 'lameduck' })
    assert.equal(r.scenario.sidecar, 'envoy-real')
    assertDrainedUnderLoad(r)
    assert.equal(r.failed, 0, lossDetail(r))
    for (const o of r.offline) {
      assert.equal(o.killed, false, `${o.id} was not SIGKILLed`)
      assert.equal(o.drain?.outcome, 'offline')
      assert.ok(Number(o.drain?.sidecarMs) > 0, `${o.id} ran the sidecar phase`)
    }
    // Istio's stats matcher on the real binary: without EXIT_ON_ZERO_ACTIVE_CONNECTIONS Envoy has no
    // downstream_cx_active. Where the request gauges end the phase (idle) that is said in the log, not a
    // problem; where the bounded fallback wait ends it, it is one problem. With the option on, a count: none.
    for (const problems of problemsOf(r)) assert.ok(exitOnZeroActiveConnections ? problems.length === 0 : problems.length === 0 || (problems.length === 1 && problems[0] === 'unavailable'), JSON.stringify(problems))
  })
}
