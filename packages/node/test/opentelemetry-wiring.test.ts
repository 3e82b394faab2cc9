// attach()'s `openTelemetry` option: the observer is on by default and reads the global SDK; the
// flush step's budget comes out of shutdownTimeoutMs; bad values are refused at the edge.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { InvalidOptionError } from '@lameduck/core'
import { trace } from '@opentelemetry/api'
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import { attach } from '@lameduck/node'
import { openTelemetry } from '../src/opentelemetry.ts'
import { startServer, stop, until } from './helpers.ts'

const exporter = new InMemorySpanExporter()
trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }))

test('the observer is on by default and reports to the app\'s global SDK; openTelemetry: false turns it off', async (t) => {
  for (const openTelemetry of [undefined, false] as const) {
    exporter.reset()
    const s = await startServer(openTelemetry === undefined ? {} : { openTelemetry })
    t.after(() => stop(s))
    await until(() => s.lameduck.state === 'serving', 'serving')
    await s.lameduck.offline()
    const names = exporter.getFinishedSpans().map((sp) => sp.name).sort()
    assert.deepEqual(names, openTelemetry === false ? [] : ['lameduck.offline', 'lameduck.online'], `openTelemetry: ${String(openTelemetry)}`)
    await stop(s)
  }
})

test('an openTelemetry() observer in observers takes the default one\'s place (one span per drain, not two)', async (t) => {
  exporter.reset()
  const s = await startServer({ observers: [openTelemetry()] })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  await s.lameduck.offline()
  assert.equal(exporter.getFinishedSpans().filter((sp) => sp.name === 'lameduck.offline').length, 1)
})

test('the flush step\'s budget is taken out of shutdownTimeoutMs: the drain and close get the rest', async (t) => {
  const flush = async (): Promise<void> => {}
  const cases: Array<[object, number]> = [
    [{ shutdownTimeoutMs: 10_000, openTelemetry: { flush, flushTimeoutMs: 1_000 } }, 9_000],
    [{ shutdownTimeoutMs: 10_000, openTelemetry: { flush } }, 8_000], // default flushTimeoutMs 2 s
    [{ shutdownTimeoutMs: 10_000 }, 10_000], // no flush, nothing reserved
    [{ shutdownTimeoutMs: 10_000, openTelemetry: false }, 10_000]
  ]
  for (const [options, drainBound] of cases) {
    const s = await startServer(options)
    t.after(() => stop(s))
    assert.equal(s.lameduck.status().shutdownTimeoutMs, drainBound, JSON.stringify(options))
    await stop(s)
  }
})

test('bad openTelemetry options are refused at attach(), naming the option and the fix', async () => {
  const cases: Array<[unknown, RegExp]> = [
    [{ flush: 'yes' }, /openTelemetry\.flush.*\(\) => sdk\.shutdown\(\)/],
    [{ flushTimeoutMs: 1_000 }, /openTelemetry\.flushTimeoutMs.*needs openTelemetry\.flush/],
    [{ flush: async () => {}, flushTimeoutMs: -1 }, /openTelemetry\.flushTimeoutMs/],
    [{ tracerProvider: {} }, /openTelemetry\.tracerProvider.*getTracer/],
    [{ meterProvider: 42 }, /openTelemetry\.meterProvider.*getMeter/],
    [{ flsuh: async () => {} }, /openTelemetry\.flsuh/],
    ['on', /openTelemetry/]
  ]
  for (const [value, message] of cases) {
    const server = createServer()
    await assert.rejects(attach(server, { service: 'orders', signals: false, admin: false, openTelemetry: value as never }), (err: Error) => {
      assert.ok(err instanceof InvalidOptionError, String(err))
      assert.match(err.message, message)
      return true
    }, JSON.stringify(value))
  }
  const server = createServer()
  await assert.rejects(attach(server, { service: 'orders', signals: false, admin: false, windows: 'none', shutdownTimeoutMs: 1_000, openTelemetry: { flush: async () => {}, flushTimeoutMs: 1_000 } }),
    /openTelemetry\.flushTimeoutMs.*leaves nothing of shutdownTimeoutMs \(1000 ms\)/)
})
