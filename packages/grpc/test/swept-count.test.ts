// While serving, attachGrpc() counts a call without a listener on its HTTP/2 stream:
// the open-call table is swept for destroyed streams. These tests hold the counts
// (in flight, and streams for 'goingAway') to what a listener would say, across
// many sweeps and a cancellation; and a call counted that way is still waited for
// by a drain that starts while it is open.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { runCall, startGrpc, unary, until, type Msg } from './helpers.ts'

type Started = Awaited<ReturnType<typeof startGrpc>>

function upgraded (s: Started): number {
  return (s.lameduck!.status() as { connections: { upgraded: number } }).connections.upgraded
}

/** A server with attachGrpc() serving, and a server stream of its that flows until cancelled or ended. */
async function flowing (t: { after: (fn: () => Promise<void>) => void }, options: Parameters<typeof startGrpc>[0] = {}): Promise<{ s: Started, client: Record<string, any>, stream: { cancel(): void }, status: Promise<{ code: number }> }> {
  const s = await startGrpc(options)
  t.after(() => s.stop())
  await until(() => s.lameduck!.state === 'serving', 'serving')
  const client = s.client()
  const messages: Msg[] = []
  const stream = client.ServerStream({ count: 0, ms: 20 })
  stream.on('data', (m: Msg) => { messages.push(m) })
  stream.on('error', () => {})
  const status = new Promise<{ code: number }>((resolve) => stream.on('status', resolve))
  await until(() => messages.length > 0, 'the stream to flow')
  return { s, client, stream, status }
}

test('gRPC while serving: the counts follow finished and cancelled calls across many sweeps', async (t) => {
  const { s, client, stream } = await flowing(t)
  const lameduck = s.lameduck!
  // Far more calls than the table's smallest sweep size: sweeps run with the stream open.
  for (let i = 0; i < 30; i++) await unary(client, { text: String(i) })
  assert.equal((await runCall(client, 'bidi', { ms: 0 })).code, 0)
  assert.equal(lameduck.lifecycle.inflight.count, 1, 'the open stream, and none of the calls that ended')
  assert.equal(upgraded(s), 1, 'the open stream is long-lived; the bidi call that ended is not')
  stream.cancel()
  await until(() => lameduck.lifecycle.inflight.count === 0, 'the cancelled stream no longer counted')
  assert.equal(upgraded(s), 0)
})

test('gRPC: a stream counted while serving holds the drain, and the in-flight wait ends with it', async (t) => {
  const { s, client, status } = await flowing(t, { lameduck: { maxRequestMs: 10_000 } })
  const lameduck = s.lameduck!
  for (let i = 0; i < 20; i++) await unary(client, { text: String(i) })
  let settled = false
  const offline = lameduck.offline({ reason: 'test' }).finally(() => { settled = true })
  await until(() => lameduck.lifecycle.drain?.phase === 'inflight', 'the window over, the drain waiting for the stream')
  assert.equal(settled, false, 'the offline sequence waits for the open stream')
  assert.equal(lameduck.lifecycle.inflight.count, 1)
  for (const call of s.seen.streams) call.end()
  assert.equal((await status).code, 0)
  const report = await offline
  assert.equal(report.outcome, 'offline')
  assert.equal(report.inflightAtEnd, 0)
})
