// The OpenTelemetry SDK as an app registers it, for the overhead bench's `-otel` servers: a
// TracerProvider with a BatchSpanProcessor and a MeterProvider whose reader collects every second
// (lameduck's gauges are read then), both exporting to a sink that drops everything (the
// exporter's network is the app's cost, not lameduck's), and the AsyncLocalStorage context manager
// that NodeSDK and NodeTracerProvider.register() install (without one the API propagates nothing in
// Node). Loading it also makes Node's AsyncContextFrame switch at start-up (see servers.ts).
import { context, metrics, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { BatchSpanProcessor, TracerProvider, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace'
import { AggregationTemporality, MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter, type ResourceMetrics } from '@opentelemetry/sdk-metrics'

// ExportResultCode.SUCCESS (0), without a dependency on @opentelemetry/core.
type Done = (result: { code: 0 }) => void

class Sink implements SpanExporter, PushMetricExporter {
  exported = 0
  export (items: ReadableSpan[] | ResourceMetrics, done: Done): void { this.exported += Array.isArray(items) ? items.length : 1; done({ code: 0 }) }
  selectAggregationTemporality (): AggregationTemporality { return AggregationTemporality.CUMULATIVE }
  async shutdown (): Promise<void> {}
  async forceFlush (): Promise<void> {}
}

export function installOtelSdk (): void {
  const sink = new Sink()
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new BatchSpanProcessor({ exporter: sink })] }))
  // Every second by default (harsher than the SDK's 60 s); the callgrind bench sets the SDK's own 60 s, since under
  // valgrind a second holds few requests and a per-second collection would be charged to each of them.
  const exportIntervalMillis = Number(process.env.LAMEDUCK_BENCH_OTEL_COLLECT_MS ?? 1_000)
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: sink, exportIntervalMillis })] }))
}
