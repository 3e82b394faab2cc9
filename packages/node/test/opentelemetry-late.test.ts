// An app whose SDK starts after attach(): the observer reads the providers the app registered
// (otel-global.ts) as each sequence starts and from the first state change they are there, so
// nothing is lost after the registration. Its own process: the registration is global.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { metrics, trace } from '@opentelemetry/api'
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import { AggregationTemporality, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { METRIC } from '../src/otel-names.ts'
import { startServer, stop, until } from './helpers.ts'

class TestReader extends MetricReader {
  constructor () { super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE }) }
  protected override async onShutdown (): Promise<void> {}
  protected override async onForceFlush (): Promise<void> {}
}

test('an SDK registered after attach() gets the next sequence\'s span and the metrics from the next state change', async (t) => {
  const s = await startServer({})
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')

  const exporter = new InMemorySpanExporter()
  const reader = new TestReader()
  assert.ok(trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] })))
  assert.ok(metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] })))

  await s.lameduck.offline({ reason: 'late sdk' })
  // The online sequence ended before the registration: only the offline one is traced.
  assert.deepEqual(exporter.getFinishedSpans().map((sp) => sp.name), ['lameduck.offline'])
  const { resourceMetrics } = await reader.collect()
  const names = resourceMetrics.scopeMetrics.flatMap((sm) => sm.metrics).map((m) => m.descriptor.name)
  for (const name of [METRIC.state, METRIC.offlineDuration]) assert.ok(names.includes(name), `${name} exported (got ${names.join(', ')})`)
})
