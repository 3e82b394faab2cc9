// The rollout lab's edges without running a rollout: option errors name the option
// and the fix; the demo's median and spread; the chart's shared, labelled scales.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { InvalidOptionError } from '@lameduck/core'
import { resolveRollout } from '../src/rollout/options.ts'
import { median, medianRun } from '../src/rollout/demo-table.ts'
import { renderChart } from '../src/rollout/chart.ts'
import type { RolloutReport } from '../src/rollout/report.ts'

test('options: the consumer defaults to plain for naive and sleep, the balancer for lameduck', () => {
  assert.equal(resolveRollout({ mode: 'naive' }).consumer, 'plain')
  assert.equal(resolveRollout({ mode: 'sleep' }).consumer, 'plain')
  assert.equal(resolveRollout({ mode: 'lameduck' }).consumer, 'balancer')
  assert.equal(resolveRollout({ mode: 'naive', consumer: 'balancer' }).consumer, 'balancer')
})

test('options: bad transport, cluster and consumer are typed errors naming the option', () => {
  const bad = (o: Parameters<typeof resolveRollout>[0], option: string): void => {
    assert.throws(() => resolveRollout(o), (err: unknown) => err instanceof InvalidOptionError && err.option === option)
  }
  bad({ transport: 'h3' as never }, 'transport')
  bad({ transport: 'h2', registry: 'nacos' }, 'transport')
  bad({ transport: 'https', sidecar: true }, 'transport')
  bad({ cluster: 0 }, 'cluster')
  bad({ cluster: 2, registry: 'none' }, 'cluster')
  bad({ consumer: 'ribbon' as never }, 'consumer')
  bad({ sidecar: 'istio' as never }, 'sidecar')
  bad({ transport: 'h2c', sidecar: 'envoy-real' }, 'transport')
})

test('options: grpc runs on the Service, Eureka and Nacos paths, behind the real Envoy but not the stand-in', () => {
  for (const registry of ['none', 'eureka', 'nacos'] as const) {
    assert.equal(resolveRollout({ transport: 'grpc', registry }).transport, 'grpc')
    assert.equal(resolveRollout({ transport: 'grpc', registry, sidecar: 'envoy-real' }).sidecar, 'envoy-real')
  }
  for (const sidecar of [true, 'stand-in'] as const) {
    assert.throws(() => resolveRollout({ transport: 'grpc', sidecar }), (err: unknown) => err instanceof InvalidOptionError && err.option === 'transport' && /envoy-real/.test(err.message) && /HTTP\/1\.1 only/.test(err.message))
  }
})

test('options: sidecar true is the stand-in; envoy-real runs the real binary', () => {
  assert.equal(resolveRollout({}).sidecar, false)
  assert.equal(resolveRollout({ sidecar: true }).sidecar, 'stand-in')
  assert.equal(resolveRollout({ sidecar: 'envoy-real' }).sidecar, 'envoy-real')
})

const report = (failed: number, durationMs: number, perSecond: number): RolloutReport => ({
  failed,
  total: 100,
  durationMs,
  failures: { refused: failed, noInstance: 0, reset: 0, status5xx: 0, timeout: 0, other: 0 },
  timeline: { bucketMs: 250, buckets: [{ t: 0, perInstance: { a: perSecond / 4 }, failed }], markers: [] },
  instances: [{ id: 'a' }]
} as unknown as RolloutReport)

test('demo numbers: the median and the median run', () => {
  assert.equal(median([5, 1, 88, 6, 7]), 6)
  assert.equal(median([1, 2, 3, 4]), 3)
  assert.equal(medianRun([report(5, 1, 1), report(88, 1, 1), report(6, 1, 1)]).failed, 6)
})

test('chart: every panel on the same scales, the failure scale labelled', () => {
  const svg = renderChart([{ title: 'a', report: report(2, 10_000, 300) }, { title: 'b', report: report(40, 20_000, 100) }])
  // One rate label and one failure label per panel, the same in both: the largest of all panels.
  assert.equal(svg.match(/500 ok\/s/g)?.length, 2)
  assert.equal(svg.match(/200 failed\/s/g)?.length, 2)
  // The shorter run is drawn on the longer run's time axis: its 10 s tick exists in both panels.
  assert.equal(svg.match(/>20s</g)?.length, 2)
})
