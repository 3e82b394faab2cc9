import { test } from 'node:test'
import assert from 'node:assert/strict'
import { silentLogger, type Logger } from '@lameduck/core'
import type { AttachOptions } from '@lameduck/node'
import { SpanStatusCode, trace, metrics } from '@opentelemetry/api'
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace'
import { AggregationTemporality, DataPointType, MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics'
import { ATTR_K8S_NAMESPACE_NAME, ATTR_K8S_POD_NAME } from '@opentelemetry/semantic-conventions'
import { ATTR_K8S_NODE_NAME, ATTR_K8S_POD_UID, ATTR_K8S_CONTAINER_NAME, ATTR_SERVICE_INSTANCE_ID } from '@opentelemetry/semantic-conventions/incubating'
import { openTelemetry, boundedFlush, type OpenTelemetryObserver } from '../src/opentelemetry.ts'
import { KUBERNETES_ENV, METRIC, SERVICE_INSTANCE_ID, lameduckResourceAttributes } from '../src/otel-names.ts'
import { startServer, stop, until, type Started } from './helpers.ts'

/** startServer() with the observer in the engine's `observers`; detach() is what the engine's close runs. */
async function startObserved (observer: OpenTelemetryObserver, options: Partial<AttachOptions> = {}): Promise<Started & { detach: () => Promise<void> }> {
  const s = await startServer({ observers: [observer], ...options })
  return { ...s, detach: async () => { await observer.finish('close') } }
}

class TestReader extends MetricReader {
  constructor () { super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE }) }
  protected override async onShutdown (): Promise<void> {}
  protected override async onForceFlush (): Promise<void> {}
}

function sdk () {
  const exporter = new InMemorySpanExporter()
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] })
  const reader = new TestReader()
  const meterProvider = new MeterProvider({ readers: [reader] })
  return { exporter, tracerProvider, reader, meterProvider }
}

async function collect (reader: MetricReader): Promise<Map<string, ResourceMetrics['scopeMetrics'][number]['metrics'][number]>> {
  const { resourceMetrics } = await reader.collect()
  return new Map(resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m]))
}

const events = (span: ReadableSpan): string[] => span.events.map((e) => e.name)

test('opentelemetry: a drain is one span with an event per phase and the report as attributes; metrics follow', async (t) => {
  const { exporter, tracerProvider, reader, meterProvider } = sdk()
  const s = await startObserved(openTelemetry({ tracerProvider, meterProvider }, 'orders'), { windows: { clientFetchMs: 200 } })
  t.after(async () => { await s.detach(); await stop(s) })
  await until(() => s.lameduck.state === 'serving', 'serving')
  await fetch(`${s.url}/hello`).then(async (r) => await r.text())
  const id = s.lameduck.lifecycle.instance?.id

  await s.lameduck.offline({ reason: 'test' })
  const offline = exporter.getFinishedSpans().find((sp) => sp.name === 'lameduck.offline')
  assert.ok(offline, 'the offline span ended with the report')
  assert.deepEqual(events(offline), ['lameduck.drain.deregistering', 'lameduck.deregistered', 'lameduck.drain.window', 'lameduck.drain.inflight', 'lameduck.window.term', 'lameduck.offline'])
  const window = offline.events.find((e) => e.name === 'lameduck.drain.window')!
  assert.equal(window.attributes?.['lameduck.reason'], 'deregistration confirmed')
  const term = offline.events.find((e) => e.name === 'lameduck.window.term')!
  assert.equal(term.attributes?.['lameduck.window.term'], 'registry')
  assert.equal(term.attributes?.['lameduck.window.ended_by'], 'confirmed')
  const inflight = offline.events.find((e) => e.name === 'lameduck.drain.inflight')!
  assert.equal(inflight.attributes?.['lameduck.reason'], 'window elapsed')
  assert.equal(offline.attributes['lameduck.offline.outcome'], 'offline')
  assert.equal(offline.attributes['lameduck.deregistration.state'], 'confirmed')
  assert.equal(offline.attributes['lameduck.offline.window_ms'], 200)
  assert.equal(offline.attributes['lameduck.service'], 'orders')
  assert.equal(offline.attributes['lameduck.instance.id'], id)
  assert.equal(offline.status.code, SpanStatusCode.UNSET)
  assert.ok(offline.duration[0] * 1000 + offline.duration[1] / 1e6 >= 200, 'the span lasts at least the window')

  const online = exporter.getFinishedSpans().find((sp) => sp.name === 'lameduck.online')
  assert.ok(online)
  assert.deepEqual(events(online), ['lameduck.state.waiting', 'lameduck.state.registering', 'lameduck.registered', 'lameduck.state.serving'])
  assert.equal(online.attributes['lameduck.online.outcome'], 'serving')

  const m = await collect(reader)
  const duration = m.get(METRIC.offlineDuration)!
  assert.equal(duration.descriptor.unit, 's')
  assert.equal(duration.dataPointType, DataPointType.HISTOGRAM)
  const point = duration.dataPoints[0]!
  assert.equal(point.attributes['lameduck.offline.outcome'], 'offline')
  assert.equal((point.value as { count: number }).count, 1)
  assert.deepEqual((point.value as { buckets: { boundaries: number[] } }).buckets.boundaries.slice(0, 3), [0.5, 1, 2.5])
  const state = m.get(METRIC.state)!
  assert.deepEqual(state.dataPoints.filter((p) => p.value === 1).map((p) => p.attributes['lameduck.state']), ['offline'])
  assert.equal(m.get(METRIC.deregistrationAttempts)!.dataPoints[0]!.value, 1)
  assert.equal(m.get(METRIC.active)!.dataPoints[0]!.value, 0)
  assert.equal(m.get(METRIC.whileDraining)!.dataPoints[0]!.value, 0)
})

test('opentelemetry: requests while draining and a request a bound left in flight are counted; the span says so', async (t) => {
  const { exporter, tracerProvider, reader, meterProvider } = sdk()
  const s = await startObserved(openTelemetry({ tracerProvider, meterProvider }), { windows: { clientFetchMs: 100 }, maxRequestMs: 100, shutdownTimeoutMs: 10_000 })
  t.after(async () => { await s.detach(); await stop(s) })
  await until(() => s.lameduck.state === 'serving', 'serving')
  const slow = fetch(`${s.url}/slow?ms=1500`).then(async (r) => await r.text(), () => '')
  await until(() => s.lameduck.lifecycle.inflight.count === 1, 'the slow request in flight')
  const report = await s.lameduck.offline()
  assert.equal(report.inflightAtEnd, 1)
  const span = exporter.getFinishedSpans().find((sp) => sp.name === 'lameduck.offline')!
  assert.equal(span.status.code, SpanStatusCode.ERROR)
  assert.match(span.status.message ?? '', /maxRequestMs reached with 1 request/)
  const m = await collect(reader)
  const forced = m.get(METRIC.forcedCloses)!.dataPoints[0]!
  assert.equal(forced.value, 1)
  assert.equal(forced.attributes['lameduck.bound'], 'max_request')
  await slow
})

test('opentelemetry: the names are the semantic conventions\' own', () => {
  const names = Object.fromEntries(KUBERNETES_ENV)
  assert.equal(names[ATTR_K8S_POD_NAME], 'POD_NAME')
  assert.equal(names[ATTR_K8S_NAMESPACE_NAME], 'POD_NAMESPACE')
  assert.equal(names[ATTR_K8S_NODE_NAME], 'NODE_NAME')
  assert.equal(names[ATTR_K8S_POD_UID], 'POD_UID')
  assert.equal(names[ATTR_K8S_CONTAINER_NAME], 'CONTAINER_NAME')
  assert.equal(SERVICE_INSTANCE_ID, ATTR_SERVICE_INSTANCE_ID)
  assert.deepEqual(lameduckResourceAttributes({ env: { POD_NAME: 'orders-7d9f', POD_NAMESPACE: 'shop', NODE_NAME: ' ' } }), {
    'k8s.pod.name': 'orders-7d9f', 'k8s.namespace.name': 'shop', 'service.instance.id': 'shop.orders-7d9f'
  })
  assert.deepEqual(lameduckResourceAttributes({ env: {}, instanceId: 'i-1' }), { 'service.instance.id': 'i-1' })
})

test('opentelemetry: without an SDK everything is the API\'s no-op', async (t) => {
  assert.equal(trace.getTracerProvider().getTracer('x').startSpan('y').isRecording(), false)
  const s = await startObserved(openTelemetry())
  t.after(async () => { await stop(s) })
  await until(() => s.lameduck.state === 'serving', 'serving')
  await s.lameduck.offline()
  await s.detach()
  assert.ok(metrics.getMeterProvider())
})

test('opentelemetry: a hanging flush is bounded and reported once; a failing one is reported', async () => {
  const warnings: string[] = []
  const logger: Logger = { ...silentLogger, warn: (_o, msg) => { warnings.push(msg ?? '') } }
  const result = await boundedFlush(async () => await new Promise(() => {}), 50, logger)
  assert.equal(result, 'timeout')
  assert.equal(warnings.length, 1)
  assert.match(warnings[0]!, /did not finish within flushTimeoutMs \(50 ms/)
  assert.equal(await boundedFlush(async () => { throw new Error('exporter refused') }, 1_000, logger), 'failed')
  assert.match(warnings[1]!, /exporter refused/)
  assert.equal(await boundedFlush(async () => {}, 1_000, logger), 'flushed')
})

test('opentelemetry: the observer ends an open drain span at close and then flushes', async (t) => {
  const { exporter, tracerProvider, meterProvider, reader } = sdk()
  let flushedWith = -1
  let stateAtFlush: unknown[] = []
  const flush = async (): Promise<void> => {
    flushedWith = exporter.getFinishedSpans().length
    stateAtFlush = (await collect(reader)).get(METRIC.state)?.dataPoints.filter((p) => p.value === 1).map((p) => p.attributes['lameduck.state']) ?? []
  }
  const s = await startObserved(openTelemetry({ tracerProvider, meterProvider, flush }), { windows: { clientFetchMs: 60_000 }, shutdownTimeoutMs: 120_000 })
  t.after(async () => { await stop(s) })
  await until(() => s.lameduck.state === 'serving', 'serving')
  s.lameduck.offline().catch(() => {})
  await until(() => s.lameduck.state === 'draining', 'draining')
  await s.detach()
  const span = exporter.getFinishedSpans().find((sp) => sp.name === 'lameduck.offline')!
  assert.equal(span.status.code, SpanStatusCode.ERROR)
  assert.ok(events(span).includes('lameduck.closed'))
  assert.equal(flushedWith, exporter.getFinishedSpans().length, 'the flush ran after the span ended')
  assert.deepEqual(stateAtFlush, ['draining'], 'the flush\'s last collection still reads the state')
})

test('opentelemetry: nothing is touched per request (no span, no counter, no callback outside a collection)', async (t) => {
  const calls: string[] = []
  const { tracerProvider, meterProvider } = sdk()
  const counting = {
    getTracer: (name: string) => {
      const tracer = tracerProvider.getTracer(name)
      return { startSpan: (...args: Parameters<typeof tracer.startSpan>) => { calls.push('startSpan'); return tracer.startSpan(...args) }, startActiveSpan: tracer.startActiveSpan.bind(tracer) }
    }
  }
  const meter = meterProvider.getMeter('x')
  const wrap = <T extends object>(instrument: T, method: string): T => new Proxy(instrument, { get: (o, k) => k === method ? (...a: unknown[]) => { calls.push(method); return (o as Record<string, (...x: unknown[]) => unknown>)[method]!(...a) } : (o as Record<string | symbol, unknown>)[k] })
  const countingMeter = new Proxy(meter, {
    get: (o, k) => {
      if (k === 'createCounter') return (...a: Parameters<typeof meter.createCounter>) => wrap(meter.createCounter(...a), 'add')
      if (k === 'createHistogram') return (...a: Parameters<typeof meter.createHistogram>) => wrap(meter.createHistogram(...a), 'record')
      if (k === 'addBatchObservableCallback') return (cb: Parameters<typeof meter.addBatchObservableCallback>[0], list: Parameters<typeof meter.addBatchObservableCallback>[1]) => { meter.addBatchObservableCallback((r) => { calls.push('collect'); return cb(r) }, list) }
      return (o as unknown as Record<string | symbol, unknown>)[k]
    }
  })
  const s = await startObserved(openTelemetry({ tracerProvider: counting as never, meterProvider: { getMeter: () => countingMeter } }))
  t.after(async () => { await stop(s) })
  await until(() => s.lameduck.state === 'serving', 'serving')
  const before = calls.length
  for (let i = 0; i < 50; i++) await fetch(`${s.url}/hello`).then(async (r) => await r.text())
  assert.deepEqual(calls.slice(before), [], 'no instrument or span touched by 50 requests')
  assert.equal(s.lameduck.lifecycle.inflight.total >= 50, true)
  // Control: a drain does touch them (a span, the histogram, the counter).
  await s.lameduck.offline()
  assert.ok(calls.includes('record') && calls.includes('add') && calls.filter((c) => c === 'startSpan').length >= 1)
})
