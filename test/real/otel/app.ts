// A provider in a child process with the OpenTelemetry JS SDK set up the way an app does it:
// a TracerProvider with a BatchSpanProcessor and a MeterProvider with a periodic reader, both
// exporting OTLP/HTTP to `otlp` (a real Collector, or a server that never answers), the resource
// from lameduckResourceAttributes(), and the SDK's shutdown handed to lameduck as its flush step
// (unless `flush: false`). Prints JSON lines: listening, state changes, and lameduck's log.
import { createServer } from 'node:http'
import { memoryRegistry } from '@lameduck/core'
import { attach, lameduckResourceAttributes } from '@lameduck/node'
import { metrics, trace } from '@opentelemetry/api'
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'

const o = JSON.parse(process.argv[2] ?? '{}') as { otlp: string, flush?: boolean, flushTimeoutMs?: number, windowMs?: number, maxRequestMs?: number, shutdownTimeoutMs?: number }
const out = (line: object): void => { process.stdout.write(JSON.stringify({ t: Date.now(), ...line }) + '\n') }

const resource = resourceFromAttributes({ 'service.name': 'orders', ...lameduckResourceAttributes() })
// Long periods: what reaches the Collector after SIGTERM got there through the flush step.
const tracerProvider = new TracerProvider({ resource, spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: `${o.otlp}/v1/traces` }), scheduledDelayMillis: 60_000 })] })
const meterProvider = new MeterProvider({ resource, readers: [new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter({ url: `${o.otlp}/v1/metrics` }), exportIntervalMillis: 60_000 })] })
trace.setGlobalTracerProvider(tracerProvider)
metrics.setGlobalMeterProvider(meterProvider)

const log = (level: number) => (obj: object, msg?: string): void => { out({ level, msg, ...obj }) }
// /slow answers after 20 s: what a forced exit cuts.
const server = createServer((req, res) => { if (req.url === '/slow') { out({ event: 'slow' }); setTimeout(() => res.end('slow'), 20_000).unref() } else res.end('ok') })
const lameduck = await attach(server, {
  service: 'orders',
  host: '127.0.0.1',
  registry: memoryRegistry(),
  windows: { clientFetchMs: o.windowMs ?? 300 },
  ...(o.maxRequestMs === undefined ? {} : { maxRequestMs: o.maxRequestMs }),
  ...(o.shutdownTimeoutMs === undefined ? {} : { shutdownTimeoutMs: o.shutdownTimeoutMs }),
  admin: false,
  logger: { debug: () => {}, info: log(30), warn: log(40), error: log(50) },
  openTelemetry: o.flush === false
    ? {}
    : { flush: async () => await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]), ...(o.flushTimeoutMs === undefined ? {} : { flushTimeoutMs: o.flushTimeoutMs }) }
})
lameduck.on('state', (change) => { out({ event: 'state', to: change.to }) })
server.listen(0, '127.0.0.1', () => { out({ event: 'listening', url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }) })
