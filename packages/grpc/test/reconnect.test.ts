// Two servers behind one grpc-js channel (round_robin over both addresses), under a steady
// load of unary calls. One is shut down: with lameduck its connections get GOAWAY once the
// window is over, its calls in flight complete, and the client carries on on the other with
// no failed call. Negative control: the naive shutdown (forceShutdown) fails the calls in flight.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as grpc from '@grpc/grpc-js'
import { tcpDelay } from '@lameduck/test-utils'
import { CLOSE_GRACE_MS, MAX_CLOSE_MS } from '@lameduck/grpc'
import { clientCredentials, Echo, SECURITIES, spawnSignalApp, startGrpc, unary, until, type Security, type Started } from './helpers.ts'

/** A failed call: its status, the address its call went to, whether response headers came, and when (ms since the load's mark). */
interface Failure { code: number, details: string, peer?: string, headers?: boolean, atMs?: number }
interface Load { ok: number, issued: number, failed: Failure[], servedBy: Record<string, number>, mark: number, stop(): Promise<void> }

/** `concurrency` loops of unary calls (each `ms` long on the server) until stopped. */
function load (client: Record<string, any>, concurrency: number, ms: number): Load {
  const state = { running: true }
  const result: Load = { ok: 0, issued: 0, failed: [], servedBy: {}, mark: Date.now(), stop: async () => { state.running = false; await Promise.all(loops) } }
  const loop = async (): Promise<void> => {
    while (state.running) {
      try {
        result.issued++
        const { res } = await unary(client, { text: 'x', ms })
        result.ok++
        result.servedBy[res.servedBy!] = (result.servedBy[res.servedBy!] ?? 0) + 1
      } catch (err) {
        const e = err as grpc.ServiceError & { peer?: string, headers?: boolean }
        result.failed.push({ code: e.code, details: e.details, peer: e.peer, headers: e.headers, atMs: Date.now() - result.mark })
      }
    }
  }
  const loops = Array.from({ length: concurrency }, loop)
  return result
}

async function pair (security: Security, lameduck: boolean): Promise<{ a: Started, b: Started, client: grpc.Client & Record<string, any> }> {
  const a = await startGrpc({ security, name: 'a', lameduck: lameduck ? {} : false })
  const b = await startGrpc({ security, name: 'b', lameduck: lameduck ? {} : false })
  const client = new Echo(`ipv4:127.0.0.1:${a.port},127.0.0.1:${b.port}`, clientCredentials(security), {
    'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
    // The certificate names 127.0.0.1; with two addresses the target has no single host to check.
    ...(security === 'tls' ? { 'grpc.ssl_target_name_override': '127.0.0.1', 'grpc.default_authority': '127.0.0.1' } : {})
  }) as grpc.Client & Record<string, any>
  return { a, b, client }
}

const CASES = [...SECURITIES.map((security) => ({ security, drain: true })), { security: 'plaintext' as const, drain: false }]

for (const { security, drain } of CASES) {
  const how = drain ? '' : ' (a grpc-js without drain(): GOAWAY by session.close())'
  test(`${security}: a server shut down under load: GOAWAY after the window, its calls complete, the client moves to the other, 0 failed${how}`, async (t) => {
    const { a, b, client } = await pair(security, true)
    let drains = 0
    if (drain) {
      const own = a.server.drain
      a.server.drain = (port, graceMs) => { drains++; own.call(a.server, port, graceMs) }
    } else {
      (a.server as { drain?: unknown }).drain = undefined
    }
    t.after(async () => { client.close(); await Promise.all([a.stop(), b.stop()]) })
    await until(() => a.lameduck!.state === 'serving' && b.lameduck!.state === 'serving', 'both serving')
    const l = load(client, 8, 40)
    await until(() => (l.servedBy.a ?? 0) > 20 && (l.servedBy.b ?? 0) > 20, 'calls on both servers')

    l.mark = Date.now()
    await a.lameduck!.shutdown()
    const closedAfterMs = Date.now() - l.mark
    // Counted where the calls arrive: a response from a may still be on its way to the client's loop.
    const startedOnA = a.seen.started
    const onB = l.servedBy.b ?? 0
    await until(() => (l.servedBy.b ?? 0) > onB + 50, 'calls go on on b')
    await l.stop()
    t.diagnostic(`calls: ${l.ok} ok (a ${l.servedBy.a ?? 0}, b ${l.servedBy.b ?? 0}), ${l.failed.length} failed`)
    // What a's close said (a bound that cut calls warns, naming them), and each failed call's address and
    // time: the first things to read when this fails (the suite's failure log keeps only the message).
    const warned = a.log.lines.filter((x) => x.level === 'warn').map((x) => x.msg)
    for (const line of warned) t.diagnostic(`a warned: ${line}`)
    assert.deepEqual(l.failed, [], `failed calls (a at port ${a.port}, b at ${b.port}; a's shutdown took ${closedAfterMs} ms from the mark): ${JSON.stringify(l.failed)}; a warned: ${JSON.stringify(warned)}`)
    assert.equal(a.seen.started, startedOnA, 'nothing reached a once it closed')
    assert.equal(l.servedBy.a, startedOnA, 'every call a started was answered')
    assert.equal(a.lameduck!.state, 'stopped')
    const goAway = a.log.lines.find((line) => line.msg.includes('GOAWAY'))
    assert.ok(goAway, 'a told its connections to go')
    assert.equal(a.lameduck!.lifecycle.lastReport?.inflightAtEnd, 0)
    assert.equal(drains, drain ? 1 : 0, 'drain() once per bound port where grpc-js has it')
  })
}

// A client that reads late: the provider's answers reach it LATE_MS after they were sent (a starved
// client reads its socket that late), longer than the close grace, shorter than MAX_CLOSE_MS. The
// provider is a child process on its own signal path. When it closes, its calls are answered but the
// client has read neither those answers nor the GOAWAY, and goes on sending on that connection. The
// close used to give up on such a connection at CLOSE_GRACE_MS (no call open, so nothing to wait for)
// and the process exited: the kernel answered the client's next bytes with a reset, and a reset drops
// what the client had not read yet (the delay proxy passes it on at once, as TCP does). Calls the
// provider had completed failed. The close now leaves a connection with no call open to its client,
// which closes it once it has read the GOAWAY.
const LATE_MS = 3_000
test(`a client that reads the provider's answers ${LATE_MS} ms late (past the close grace), SIGTERM to the provider: it exits once the client left, 0 failed`, async (t) => {
  // Past the close grace and the second the signal path then gives the event loop to empty; a second inside MAX_CLOSE_MS.
  assert.ok(LATE_MS >= CLOSE_GRACE_MS + 1_000 + 500 && LATE_MS + 1_000 <= MAX_CLOSE_MS)
  const app = spawnSignalApp(['lameduck'])
  t.after(() => app.kill())
  await until(() => app.lines.some((l) => l.event === 'state' && l.to === 'serving'), 'the child serving', 30_000)
  const late = await tcpDelay(app.lines.find((l) => l.event === 'listening')!.port as number, { downMs: LATE_MS })
  const b = await startGrpc({ name: 'b' })
  const client = new Echo(`ipv4:127.0.0.1:${late.port},127.0.0.1:${b.port}`, clientCredentials('plaintext'), {
    'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] })
  }) as grpc.Client & Record<string, any>
  const l = load(client, 16, 40)
  t.after(async () => { await l.stop(); client.close(); await Promise.all([b.stop(), late.close()]) })
  // Each call to the child takes LATE_MS (and the connection as long to come up).
  await until(() => (l.servedBy.child ?? 0) > 0 && (l.servedBy.b ?? 0) > 20, 'calls on both servers', 30_000)

  const began = Date.now()
  app.kill()
  assert.equal(await app.exited, 0)
  const exitedAfter = Date.now() - began
  // The load goes on, as a busy client's does, until every call issued by the exit has ended, and more.
  const issued = l.issued
  await until(() => l.ok + l.failed.length >= issued + 50, 'the calls issued before the exit ended')
  await l.stop()
  t.diagnostic(`calls: ${l.ok} ok (child ${l.servedBy.child ?? 0}, b ${l.servedBy.b ?? 0}), ${l.failed.length} failed; the child exited ${exitedAfter} ms after SIGTERM`)
  assert.deepEqual(l.failed, [])
})

test('negative control: the naive shutdown (forceShutdown) under the same load fails the calls in flight', async (t) => {
  const { a, b, client } = await pair('plaintext', false)
  t.after(async () => { client.close(); await Promise.all([a.stop(), b.stop()]) })
  const l = load(client, 8, 40)
  await until(() => (l.servedBy.a ?? 0) > 20 && (l.servedBy.b ?? 0) > 20, 'calls on both servers')
  await until(() => a.seen.unaryOpen > 0, 'calls in a\'s handler')
  a.server.forceShutdown()
  const onB = l.servedBy.b ?? 0
  await until(() => (l.servedBy.b ?? 0) > onB + 50, 'calls go on on b')
  await l.stop()
  t.diagnostic(`calls: ${l.ok} ok, ${l.failed.length} failed (${[...new Set(l.failed.map((f) => grpc.status[f.code]))].join(', ')})`)
  assert.ok(l.failed.length > 0, 'calls in flight on a were lost')
  assert.ok(l.failed.every((f) => f.code === grpc.status.UNAVAILABLE || f.code === grpc.status.CANCELLED || f.code === grpc.status.INTERNAL), JSON.stringify(l.failed))
})
