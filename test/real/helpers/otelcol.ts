// A real OpenTelemetry Collector (built by test/real/otel/install-collector.sh with the Collector's
// own builder) between the OTel JS SDK and the test: the SDK exports OTLP/HTTP protobuf to it, it
// forwards OTLP/HTTP JSON to a receiver the test runs, which keeps every request body.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { until } from '@lameduck/test-utils'
import { stringify as toYaml } from 'yaml'
import { listeningPorts } from './prometheus.ts'

/** The Collector binary, built once per machine (minutes the first time). */
export function installCollector (): string {
  const out = execFileSync('bash', ['test/real/otel/install-collector.sh'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 20 * 60_000 })
  return out.trim().split('\n').at(-1)!
}

// OTLP JSON, the parts the tests read.
export type AnyValue = { stringValue?: string, intValue?: string | number, doubleValue?: number, boolValue?: boolean }
export type KeyValue = { key: string, value: AnyValue }
export interface OtlpSpan { name: string, traceId: string, startTimeUnixNano: string, endTimeUnixNano: string, attributes?: KeyValue[], events?: Array<{ name: string, timeUnixNano: string, attributes?: KeyValue[] }>, status?: { code?: number, message?: string } }
export interface OtlpTraces { resourceSpans: Array<{ resource?: { attributes?: KeyValue[] }, scopeSpans: Array<{ scope?: { name: string }, spans: OtlpSpan[] }> }> }
export interface OtlpMetric { name: string, unit?: string, gauge?: { dataPoints: Point[] }, sum?: { dataPoints: Point[], isMonotonic?: boolean }, histogram?: { dataPoints: Array<Point & { count: string | number, sum?: number, bucketCounts: Array<string | number>, explicitBounds: number[] }> } }
export interface Point { attributes?: KeyValue[], asInt?: string | number, asDouble?: number, timeUnixNano?: string }
export interface OtlpMetrics { resourceMetrics: Array<{ resource?: { attributes?: KeyValue[] }, scopeMetrics: Array<{ scope?: { name: string }, metrics: OtlpMetric[] }> }> }

export const value = (v: AnyValue | undefined): string | number | boolean | undefined =>
  v?.stringValue ?? (v?.intValue === undefined ? undefined : Number(v.intValue)) ?? v?.doubleValue ?? v?.boolValue
export const attrs = (list: KeyValue[] | undefined): Record<string, string | number | boolean | undefined> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, value(kv.value)]))

/** The OTLP/HTTP JSON receiver the Collector exports to. */
export interface Receiver { url: string, traces: OtlpTraces[], metrics: OtlpMetrics[], spans(): OtlpSpan[], metric(name: string): OtlpMetric[], close(): Promise<void> }

export async function startReceiver (): Promise<Receiver> {
  const traces: OtlpTraces[] = []
  const metrics: OtlpMetrics[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      if (req.url === '/v1/traces') traces.push(JSON.parse(body) as OtlpTraces)
      else if (req.url === '/v1/metrics') metrics.push(JSON.parse(body) as OtlpMetrics)
      res.setHeader('content-type', 'application/json')
      res.end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    traces,
    metrics,
    spans: () => traces.flatMap((t) => t.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))),
    metric: (name) => metrics.flatMap((m) => m.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))).filter((m) => m.name === name),
    close: async () => { server.closeAllConnections(); await new Promise((resolve) => server.close(resolve)) }
  }
}

export interface Collector { url: string, log(): string, stop(): Promise<void> }

/** Starts the Collector: OTLP/HTTP in on a port it binds itself, OTLP/HTTP JSON out to `exportTo`. */
export async function startCollector (bin: string, exportTo: string): Promise<Collector> {
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-otelcol-'))
  writeFileSync(join(dir, 'config.yaml'), toYaml({
    receivers: { otlp: { protocols: { http: { endpoint: '127.0.0.1:0' } } } },
    exporters: { otlphttp: { endpoint: exportTo, encoding: 'json', compression: 'none', retry_on_failure: { enabled: false }, sending_queue: { enabled: false } } },
    service: {
      telemetry: { metrics: { level: 'none' }, logs: { level: 'warn' } },
      pipelines: {
        traces: { receivers: ['otlp'], exporters: ['otlphttp'] },
        metrics: { receivers: ['otlp'], exporters: ['otlphttp'] }
      }
    }
  }))
  let log = ''
  const child: ChildProcess = spawn(bin, ['--config', join(dir, 'config.yaml')], { stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout?.on('data', (d: Buffer) => { log += d.toString() })
  child.stderr?.on('data', (d: Buffer) => { log += d.toString() })
  const exited = new Promise<void>((resolve) => child.once('exit', () => { resolve() }))
  let port = 0
  await until(() => {
    if (child.exitCode !== null) throw new Error(`the Collector exited ${child.exitCode}: ${log}`)
    port = listeningPorts(child.pid!)[0] ?? 0
    return port !== 0
  }, 'the Collector listening', { timeoutMs: 60_000 })
  return {
    url: `http://127.0.0.1:${port}`,
    log: () => log,
    stop: async () => {
      child.kill('SIGTERM')
      await exited
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
