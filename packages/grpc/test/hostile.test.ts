// Bad input: hostile metadata (huge, binary, repeated consumer ids, oversized headers), a
// client that opens thousands of streams during the drain, a handler that throws. Clear
// errors, nothing lost that a bound did not name, no crash, and no count left behind.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as grpc from '@grpc/grpc-js'
import { CONSUMER_HEADER } from '@lameduck/grpc'
import { heldWindow, type HeldWindow } from '@lameduck/test-utils'
import { runCall, serverStream, startGrpc, unary, until, type Started } from './helpers.ts'

function metadata (entries: Array<[string, string | Buffer]>): grpc.Metadata {
  const m = new grpc.Metadata()
  for (const [k, v] of entries) m.add(k, v)
  return m
}

/**
 * Drains with earlyOffline and a window held open by the test (so a slow machine cannot let it
 * pass before the call arrives), a call with `md` arriving once the deregistration is confirmed
 * (what a consumer that still routes here sends), and says whether the window ended early: a
 * window the consumers' ids cannot end stays open until released, with the monitor saying why.
 */
async function drainEndedEarly (s: Started, held: HeldWindow, md: grpc.Metadata): Promise<boolean> {
  const offline = s.lameduck!.offline()
  await until(() => s.lameduck!.lifecycle.drain?.deregisteredAt != null, 'the deregistration confirmed')
  const r = await unary(s.client(), { text: 'x' }, md)
  assert.equal(r.res.text, 'x')
  assert.equal(r.trailers?.get('x-lameduck-state')[0], 'draining')
  const ended = await Promise.race([offline.then((report) => report.endedEarly), until(() => /keeping the full window/.test(s.lameduck!.status().earlyOffline?.pending ?? ''), 'earlyOffline keeping the full window for an anonymous request').then(() => null)])
  if (ended !== null) return ended
  held.release()
  return (await offline).endedEarly
}

const HOSTILE: Array<[string, grpc.Metadata]> = [
  ['a 10 KB consumer id', metadata([[CONSUMER_HEADER, 'c'.repeat(10_000)]])],
  ['a repeated consumer id', metadata([[CONSUMER_HEADER, 'one'], [CONSUMER_HEADER, 'two']])],
  ['a consumer id with spaces', metadata([[CONSUMER_HEADER, 'not an id']])],
  ['binary metadata', metadata([[`${CONSUMER_HEADER}-bin`, Buffer.from([0, 255, 10, 13])], ['x-other-bin', Buffer.alloc(4096, 7)]])]
]

for (const [what, md] of HOSTILE) {
  test(`${what}: the call is served, the id counts as anonymous, so earlyOffline cannot be talked into an early end`, async (t) => {
    const held = heldWindow()
    const s = await startGrpc({ lameduck: { earlyOffline: { quietMs: 50 }, windows: { endpointLagMs: 20_000 }, windowEvidence: held.evidence } })
    t.after(() => s.stop())
    await until(() => s.lameduck!.state === 'serving', 'serving')
    // The consumer was calling before the drain, and calls on while it runs.
    assert.equal((await unary(s.client(), { text: 'x' }, md.clone())).res.text, 'x')
    assert.equal(await drainEndedEarly(s, held, md.clone()), false, 'the full window ran')
    assert.equal(s.lameduck!.lifecycle.inflight.count, 0)
  })
}

test('negative control: one well-formed consumer id, told during the drain, does end the window early', async (t) => {
  const held = heldWindow()
  const s = await startGrpc({ lameduck: { earlyOffline: { quietMs: 50 }, windows: { endpointLagMs: 20_000 }, windowEvidence: held.evidence } })
  t.after(() => s.stop())
  await until(() => s.lameduck!.state === 'serving', 'serving')
  await unary(s.client(), { text: 'x' }, metadata([[CONSUMER_HEADER, 'consumer-1']]))
  assert.equal(await drainEndedEarly(s, held, metadata([[CONSUMER_HEADER, 'consumer-1']])), true)
})

test('metadata over the header limit: refused by grpc-js before any handler, counted nowhere, the server goes on', async (t) => {
  const s = await startGrpc()
  t.after(() => s.stop())
  await until(() => s.lameduck!.state === 'serving', 'serving')
  const client = s.client()
  const huge = metadata(Array.from({ length: 64 }, (_, i) => [`x-big-${i}`, 'v'.repeat(4_000)] as [string, string]))
  await assert.rejects(unary(client, { text: 'x' }, huge), (err: grpc.ServiceError) => err.code !== grpc.status.OK)
  assert.equal(s.lameduck!.lifecycle.inflight.count, 0)
  assert.equal((await unary(s.client(), { text: 'after' })).res.text, 'after')
})

test('a handler that throws: UNKNOWN to the client, the call leaves the in-flight count, the drain does not wait for it', async (t) => {
  const s = await startGrpc({ lameduck: { maxRequestMs: 60_000 } })
  t.after(() => s.stop())
  await until(() => s.lameduck!.state === 'serving', 'serving')
  const client = s.client()
  for (let i = 0; i < 20; i++) {
    await assert.rejects(unary(client, { text: 'throw' }), (err: grpc.ServiceError) => err.code === grpc.status.UNKNOWN)
  }
  assert.equal(s.lameduck!.lifecycle.inflight.count, 0)
  assert.equal(s.lameduck!.lifecycle.inflight.total, 20)
  const report = await s.lameduck!.offline()
  assert.equal(report.inflightAtEnd, 0)
  assert.ok(report.inflightWaitMs < 60_000, 'not held to maxRequestMs by a call that is over')
})

/** Opens `n` server-streaming calls over `clients` connections and waits for every status. */
async function burst (s: Started, n: number, clients = 4): Promise<Map<number, number>> {
  const pool = Array.from({ length: clients }, () => s.client())
  const results = await Promise.all(Array.from({ length: n }, (_, i) => serverStream(pool[i % clients]!, { count: 3, ms: 30 })))
  const codes = new Map<number, number>()
  for (const r of results) {
    const code = r.status.code === grpc.status.OK && r.messages.length === 3 ? 0 : r.status.code
    codes.set(code, (codes.get(code) ?? 0) + 1)
  }
  return codes
}

test('2000 streams opened during the window all complete; the drain waits for them and ends with none in flight', async (t) => {
  // The window lasts until every stream has reached the server (a loaded client opens them slowly).
  const held = heldWindow()
  const s = await startGrpc({ lameduck: { maxRequestMs: 30_000, windows: { endpointLagMs: 500 }, windowEvidence: held.evidence } })
  t.after(() => s.stop())
  await until(() => s.lameduck!.state === 'serving', 'serving')
  const before = s.lameduck!.lifecycle.inflight.total
  const offline = s.lameduck!.offline()
  await until(() => s.lameduck!.state === 'draining', 'draining')
  const bursting = burst(s, 2_000)
  await until(() => s.lameduck!.lifecycle.inflight.total - before >= 2_000, 'every stream at the server', { timeoutMs: 60_000 })
  held.release()
  const codes = await bursting
  assert.deepEqual([...codes], [[0, 2_000]])
  const report = await offline
  assert.equal(report.inflightAtEnd, 0)
  assert.ok(report.requestsWhileDraining >= 2_000)
})

test('negative control: the same burst is cut when the server is shut down without lameduck', async (t) => {
  const s = await startGrpc({ lameduck: false })
  t.after(() => s.stop())
  const result = burst(s, 2_000)
  await until(() => s.seen.started >= 100, 'streams in their handlers')
  s.server.forceShutdown()
  const codes = await result
  t.diagnostic(`streams by status code (0: complete): ${JSON.stringify([...codes])}`)
  assert.ok((codes.get(0) ?? 0) < 2_000, JSON.stringify([...codes]))
})

test('mixed call kinds with hostile metadata through a drain and shutdown: every call completes', async (t) => {
  const s = await startGrpc()
  t.after(() => s.stop())
  await until(() => s.lameduck!.state === 'serving', 'serving')
  const client = s.client()
  const calls = HOSTILE.flatMap(([, md]) => (['unary', 'server streaming', 'client streaming', 'bidi'] as const).map((kind) => runCall(client, kind, { ms: 300, metadata: md.clone() })))
  await until(() => s.lameduck!.lifecycle.inflight.count === calls.length, 'every call in flight')
  await s.lameduck!.shutdown()
  for (const r of await Promise.all(calls)) assert.equal(r.code, grpc.status.OK, r.details)
})
