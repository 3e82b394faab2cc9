// lameduck's OpenTelemetry output through the real pipeline: an app in a child process with the
// OTel JS SDK and its OTLP/HTTP exporters, a real OpenTelemetry Collector (built from the Go module
// proxy by test/real/otel/install-collector.sh), and a receiver here that reads what the Collector
// forwards (OTLP/HTTP JSON). After a SIGTERM the drain's span and the metrics must arrive: the
// SDK's periods are a minute long, so they get there only through lameduck's flush step. Without
// the flush step (negative control) they do not; an exporter that never answers is bounded.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fork } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import { createInterface } from 'node:readline'
import { until } from '@lameduck/test-utils'
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { attrs, installCollector, startCollector, startReceiver, type Collector, type Receiver } from './helpers/otelcol.ts'

interface Line { t: number, event?: string, to?: string, url?: string, msg?: string, level?: number }

const POD = { POD_NAME: 'orders-5c9d7b-x2k4q', POD_NAMESPACE: 'shop', NODE_NAME: 'node-a', POD_UID: '0f8e4a52-1d55-4c0f-9a3e-7b7f1e0c2d11', CONTAINER_NAME: 'app' }

function spawnApp (t: import('node:test').TestContext, options: object) {
  const child = fork(new URL('./otel/app.ts', import.meta.url), [JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], env: { ...process.env, ...POD } })
  const lines: Line[] = []
  createInterface({ input: child.stdout! }).on('line', (l) => { try { lines.push(JSON.parse(l) as Line) } catch {} })
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => { resolve(code) }))
  t.after(async () => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); await exited })
  return {
    lines,
    exited,
    url: async () => (await until(() => lines.find((l) => l.event === 'listening'), 'the app listening')).url!,
    serving: async () => { await until(() => lines.some((l) => l.event === 'state' && l.to === 'serving'), 'the app serving') },
    kill: (signal: NodeJS.Signals) => { child.kill(signal) }
  }
}

/** A span sent through the same Collector from here: once it arrives, whatever the app sent before it has too (no queue in the Collector's exporter). */
async function sentinel (collector: Collector, receiver: Receiver): Promise<void> {
  const provider = new TracerProvider({ spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: `${collector.url}/v1/traces` }) })] })
  provider.getTracer('sentinel').startSpan('sentinel', { root: true }).end()
  await provider.shutdown()
  await until(() => receiver.spans().some((s) => s.name === 'sentinel'), 'the sentinel span through the Collector')
}

let bin = ''
let why = ''
try { bin = installCollector() } catch (err) { why = `the Collector did not build here: ${(err as Error).message}` }

test('SIGTERM: the drain\'s span and the lifecycle metrics reach a real Collector through the flush step', { skip: why || false, timeout: 120_000 }, async (t) => {
  const receiver = await startReceiver()
  t.after(() => receiver.close())
  const collector = await startCollector(bin, receiver.url)
  t.after(() => collector.stop())
  const app = spawnApp(t, { otlp: collector.url })
  const url = await app.url()
  await app.serving()
  for (let i = 0; i < 3; i++) await (await fetch(`${url}/`)).text()
  app.kill('SIGTERM')
  assert.equal(await app.exited, 0)
  assert.ok(app.lines.some((l) => /OpenTelemetry flushed in \d+ ms/.test(l.msg ?? '')), 'the flush step ran and said so')

  const offline = receiver.spans().find((s) => s.name === 'lameduck.offline')
  assert.ok(offline, `the offline span arrived (spans: ${receiver.spans().map((s) => s.name).join(', ')})`)
  assert.deepEqual(offline.events?.map((e) => e.name), ['lameduck.drain.deregistering', 'lameduck.deregistered', 'lameduck.drain.window', 'lameduck.drain.inflight', 'lameduck.window.term', 'lameduck.offline'])
  const a = attrs(offline.attributes)
  assert.equal(a['lameduck.offline.outcome'], 'offline')
  assert.equal(a['lameduck.reason'], 'SIGTERM')
  assert.equal(a['lameduck.deregistration.state'], 'confirmed')
  assert.equal(a['lameduck.offline.window_ms'], 300)
  assert.equal(a['k8s.pod.name'], POD.POD_NAME)
  assert.ok(receiver.spans().some((s) => s.name === 'lameduck.online'), 'the online span arrived')
  const resource = attrs(receiver.traces[0]!.resourceSpans[0]!.resource?.attributes)
  assert.equal(resource['service.instance.id'], `${POD.POD_NAMESPACE}.${POD.POD_NAME}.app`)
  assert.equal(resource['k8s.namespace.name'], POD.POD_NAMESPACE)
  assert.equal(resource['k8s.pod.uid'], POD.POD_UID)

  const histogram = receiver.metric('lameduck.offline.duration').flatMap((m) => m.histogram?.dataPoints ?? [])
  assert.equal(histogram.length, 1)
  assert.equal(Number(histogram[0]!.count), 1)
  assert.equal(attrs(histogram[0]!.attributes)['lameduck.offline.outcome'], 'offline')
  assert.deepEqual(histogram[0]!.explicitBounds.slice(0, 3), [0.5, 1, 2.5])
  const attempts = receiver.metric('lameduck.deregistration.attempts').flatMap((m) => m.sum?.dataPoints ?? [])
  assert.equal(Number(attempts[0]?.asInt ?? attempts[0]?.asDouble), 1)
  const state = receiver.metric('lameduck.lifecycle.state').flatMap((m) => m.gauge?.dataPoints ?? [])
  assert.ok(state.length > 0, 'the state gauge arrived')
})

test('a forced exit (shutdownTimeoutMs reached) still flushes: the cut drain\'s span arrives as an error', { skip: why || false, timeout: 120_000 }, async (t) => {
  const receiver = await startReceiver()
  t.after(() => receiver.close())
  const collector = await startCollector(bin, receiver.url)
  t.after(() => collector.stop())
  // 3 s in all: the drain and close get 2 s (the window is 0.3 s, the slow request would take 20),
  // the flush the last second.
  const app = spawnApp(t, { otlp: collector.url, maxRequestMs: 30_000, shutdownTimeoutMs: 3_000, flushTimeoutMs: 1_000 })
  const url = await app.url()
  await app.serving()
  const slow = fetch(`${url}/slow`).catch(() => null)
  await until(() => app.lines.some((l) => l.event === 'slow'), 'the slow request in flight')
  app.kill('SIGTERM')
  assert.equal(await app.exited, 1)
  await slow
  assert.ok(app.lines.some((l) => /shutdownTimeoutMs \(2000 ms\) reached/.test(l.msg ?? '')), 'the drain\'s bound is shutdownTimeoutMs less the flush')
  const offline = receiver.spans().find((s) => s.name === 'lameduck.offline')
  assert.ok(offline, `the offline span arrived (spans: ${receiver.spans().map((s) => s.name).join(', ')})`)
  assert.equal(offline.status?.code, 2) // ERROR
  assert.match(offline.status?.message ?? '', /ended by forced exit in state draining/)
  assert.ok(offline.events?.some((e) => e.name === 'lameduck.closed'))
})

test('negative control: without the flush step the drain\'s span and metrics never reach the Collector', { skip: why || false, timeout: 120_000 }, async (t) => {
  const receiver = await startReceiver()
  t.after(() => receiver.close())
  const collector = await startCollector(bin, receiver.url)
  t.after(() => collector.stop())
  const app = spawnApp(t, { otlp: collector.url, flush: false })
  await app.url()
  await app.serving()
  app.kill('SIGTERM')
  assert.equal(await app.exited, 0)
  await sentinel(collector, receiver)
  assert.deepEqual(receiver.spans().map((s) => s.name), ['sentinel'])
  assert.deepEqual(receiver.metric('lameduck.offline.duration'), [])
})

test('an exporter that never answers: the flush step is bounded and reported, the exit stays clean', { timeout: 120_000 }, async (t) => {
  const held = new Set<import('node:net').Socket>()
  const blackHole: Server = createServer(() => {}) // reads the request, never answers
  blackHole.on('connection', (s) => { held.add(s) })
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve))
  t.after(async () => { for (const s of held) s.destroy(); await new Promise((resolve) => blackHole.close(resolve)) })
  const app = spawnApp(t, { otlp: `http://127.0.0.1:${(blackHole.address() as { port: number }).port}`, flushTimeoutMs: 500 })
  await app.url()
  await app.serving()
  app.kill('SIGTERM')
  assert.equal(await app.exited, 0)
  const warning = app.lines.find((l) => /the OpenTelemetry flush did not finish within flushTimeoutMs \(500 ms/.test(l.msg ?? ''))
  assert.ok(warning, 'one warning names the bound')
  assert.equal(warning.level, 40)
  assert.equal(app.lines.filter((l) => /OpenTelemetry flush/.test(l.msg ?? '')).length, 1)
  // Bounded, by lameduck: the exporter's own timeout (10 s) never came into it.
  const term = app.lines.find((l) => /SIGTERM received/.test(l.msg ?? ''))!
  assert.ok(warning.t >= term.t + 500, 'the flush was waited for, up to its bound')
})
