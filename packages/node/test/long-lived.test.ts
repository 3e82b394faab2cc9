// Long-lived responses (server-sent events, streams): never cut by the engine;
// the app ends them on 'goingAway', and maxRequestMs bounds the in-flight wait
// with a log that names what was still open.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { ServerResponse } from 'node:http'
import type { Logger } from '@lameduck/core'
import { startServer, stop, until } from './helpers.ts'
import { transportClient, type Transport } from './transports.ts'

function memoryLogger (): Logger & { lines: Array<{ level: string, msg: string }> } {
  const lines: Array<{ level: string, msg: string }> = []
  const at = (level: string) => (_obj: object, msg?: string): void => { lines.push({ level, msg: msg ?? '' }) }
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

for (const transport of ['http', 'h2'] as Transport[]) {
  test(`${transport}: an event stream started while serving runs through the window and is ended by the app on 'goingAway'`, async (t) => {
    const s = await startServer({ windows: { clientFetchMs: 800 }, maxRequestMs: 10_000 }, transport)
    t.after(() => stop(s))
    const streams = new Set<ServerResponse>()
    s.server.prependListener('request', (req, res: ServerResponse) => {
      if (req.url !== '/events') return
      res.setHeader('content-type', 'text/event-stream')
      res.write('data: hello\n\n')
      const timer = setInterval(() => { if (!res.writableEnded) res.write('data: tick\n\n') }, 100)
      res.once('close', () => clearInterval(timer))
      streams.add(res)
    })
    s.lameduck.on('goingAway', () => { for (const res of streams) res.end('event: bye\ndata: going away\n\n') })
    await until(() => s.lameduck.state === 'serving', 'serving')
    const client = transportClient(transport, s.url)
    t.after(() => client.close())
    const events = client.request('/events')
    await until(() => s.lameduck.lifecycle.inflight.count === 1, 'the stream open')
    const report = await s.lameduck.offline()
    const res = await events
    assert.equal(res.statusCode, 200)
    assert.match(res.body, /event: bye\ndata: going away\n\n$/, 'ended by the app, not cut')
    assert.ok((res.body.match(/data: tick/g) ?? []).length >= 5, 'it streamed through the window')
    assert.equal(report.outcome, 'offline')
    assert.equal(report.inflightAtEnd, 0)
    // Ended with the stream, not at maxRequestMs: reaching it would be reported as a problem (and take its 10 s).
    assert.deepEqual(report.problems, [])
    assert.ok(report.inflightWaitMs < 10_000, 'the in-flight wait ended with the stream, not at maxRequestMs')
  })
}

test('maxRequestMs ends the in-flight wait and the log names the request it left open', async (t) => {
  const logger = memoryLogger()
  const s = await startServer({ windows: { clientFetchMs: 200 }, maxRequestMs: 300, logger })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  const client = transportClient('http', s.url)
  t.after(() => client.close())
  const slow = client.request('/slow?ms=1500')
  await until(() => s.lameduck.lifecycle.inflight.count === 1, 'in flight')
  const report = await s.lameduck.offline()
  assert.equal(report.inflightAtEnd, 1)
  const line = logger.lines.find((l) => l.level === 'warn' && /maxRequestMs \(300 ms\) reached/.test(l.msg))
  assert.ok(line, JSON.stringify(logger.lines))
  assert.match(line.msg, /1 request\(s\) still in flight.*GET \/slow\?ms=1500 \(open \d+ ms\)/)
  assert.equal((await slow).statusCode, 200, 'not cut: it completes while offline')
})
