// Streams that outlive the drain. An app that ends its streams on 'goingAway' loses nothing;
// a client that ignores GOAWAY and holds its stream open is cut at the bound (the in-flight
// wait, then the close grace), and the log names the call it cut. Negative control: grpc-js's
// own tryShutdown() waits for such a stream forever.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as grpc from '@grpc/grpc-js'
import type { GoingAway } from '@lameduck/grpc'
import { runCall, startGrpc, until, type Msg } from './helpers.ts'

/** A stream of `kind` the client keeps open: it never half-closes, whatever the server says. */
function holdOpen (client: Record<string, any>, kind: 'server streaming' | 'bidi'): { messages: Msg[], status: Promise<grpc.StatusObject> } {
  const messages: Msg[] = []
  const call = kind === 'bidi' ? client.Bidi() : client.ServerStream({ count: 0, ms: 50 })
  if (kind === 'bidi') call.write({ text: 'hello' })
  call.on('data', (m: Msg) => { messages.push(m) })
  call.on('error', () => {})
  return { messages, status: new Promise((resolve) => call.on('status', resolve)) }
}

for (const kind of ['server streaming', 'bidi'] as const) {
  test(`${kind}: the app ends its streams on 'goingAway' once the window is over; nothing is cut`, async (t) => {
    // A bound far away: the stream must end because 'goingAway' came at the window's end, not at the bound.
    const s = await startGrpc({ lameduck: { maxRequestMs: 60_000 } })
    t.after(() => s.stop())
    const lameduck = s.lameduck!
    const events: GoingAway[] = []
    lameduck.on('goingAway', (e) => {
      events.push(e)
      for (const call of s.seen.streams) call.end()
    })
    await until(() => lameduck.state === 'serving', 'serving')
    const stream = holdOpen(s.client(), kind)
    await until(() => stream.messages.length > 0, 'the stream to flow')
    await lameduck.shutdown()
    assert.equal((await stream.status).code, grpc.status.OK)
    assert.equal(events[0]?.cause, 'window')
    assert.equal(events[0]?.upgraded, 1, 'the open stream is counted as long-lived')
    assert.equal(lameduck.lifecycle.lastReport?.inflightAtEnd, 0)
    assert.equal(s.log.lines.find((l) => l.msg.includes('cutting')), undefined)
  })

  test(`${kind}: a stream that ended is no longer counted as long-lived`, async (t) => {
    const s = await startGrpc()
    t.after(() => s.stop())
    const lameduck = s.lameduck!
    const events: GoingAway[] = []
    lameduck.on('goingAway', (e) => { events.push(e) })
    await until(() => lameduck.state === 'serving', 'serving')
    const done = await runCall(s.client(), kind)
    assert.equal(done.code, grpc.status.OK)
    await until(() => lameduck.lifecycle.inflight.count === 0, 'the call to end')
    await lameduck.shutdown()
    assert.equal(events[0]?.upgraded, 0)
  })

  test(`${kind}: a client that ignores GOAWAY is cut at the bound, and the log names its call`, async (t) => {
    const s = await startGrpc({ lameduck: { maxRequestMs: 300 } })
    t.after(() => s.stop())
    const lameduck = s.lameduck!
    await until(() => lameduck.state === 'serving', 'serving')
    const stream = holdOpen(s.client(), kind)
    await until(() => stream.messages.length > 0, 'the stream to flow')
    await lameduck.shutdown()
    const status = await stream.status
    assert.notEqual(status.code, grpc.status.OK, 'the call was cut')
    assert.equal(lameduck.state, 'stopped')
    assert.equal(lameduck.lifecycle.lastReport?.inflightAtEnd, 1, 'the drain ended at maxRequestMs with it')
    const method = kind === 'bidi' ? '/lameduck.test.Echo/Bidi' : '/lameduck.test.Echo/ServerStream'
    const cut = s.log.lines.find((l) => l.level === 'warn' && l.msg.includes('cutting'))
    assert.ok(cut, 'the cut is logged')
    assert.match(cut.msg, new RegExp(`${method} \\(${kind}, peer 127\\.0\\.0\\.1:\\d+, open \\d+ ms\\)`))
    const listed = (cut.obj as { lameduck: { cut: Array<{ method: string, kind: string }> } }).lameduck.cut
    assert.deepEqual(listed.map((c) => [c.method, c.kind]), [[method, kind]])
  })
}

test('negative control: without the bound, grpc-js tryShutdown() waits for a held stream forever', async (t) => {
  const s = await startGrpc({ lameduck: false })
  t.after(() => s.stop())
  const stream = holdOpen(s.client(), 'bidi')
  await until(() => stream.messages.length > 0, 'the stream to flow')
  let done = false
  s.server.tryShutdown(() => { done = true })
  // Longer than lameduck's whole bound above (maxRequestMs 300 + the close grace): still waiting.
  await new Promise((resolve) => setTimeout(resolve, 300 + 1_500 + 500))
  assert.equal(done, false)
  s.server.forceShutdown()
  await until(() => done, 'tryShutdown to end once forced')
})
