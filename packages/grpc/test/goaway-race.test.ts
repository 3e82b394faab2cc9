// A busy client sends calls on a connection until it has read the GOAWAY. The GOAWAY a
// Node server can send names the last stream it processed, so calls already on their way
// are refused (never processed, so safe to retry). A two-step GOAWAY (the highest stream id
// first, as grpc-go and Envoy send it) does not work on Node: once any GOAWAY is sent,
// nghttp2 wants no more reads whenever no stream is active, Node stops reading the socket,
// and the calls sent meanwhile wait unread until the final GOAWAY refuses them anyway (tried
// here: they hung up to the final GOAWAY, then failed); Node has no "shutdown notice".
// What carries a busy client through lameduck's GOAWAY is grpc-js's transparent retry (on
// by default) on a channel with another address: 0 failed. With retries off the same calls
// fail, which shows they really were on their way (the negative control).
// A TCP proxy holds the client's bytes back, so calls are always on their way when the GOAWAY leaves.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as grpc from '@grpc/grpc-js'
import { tcpDelay } from '@lameduck/test-utils'
import { clientCredentials, Echo, SECURITIES, startGrpc, unary, until, type Security, type Started } from './helpers.ts'

/** Client → server latency: calls are this long on their way. */
const ON_THE_WAY_MS = 30
const CONCURRENCY = 32
/** A call the server refused unprocessed (RST_STREAM REFUSED_STREAM), as grpc-js reports it. */
const REFUSED = /^UNAVAILABLE (Stream refused by server|Write error: Stream closed with error code NGHTTP2_REFUSED_STREAM)$/

interface Load { ok: number, failed: string[], servedBy: Record<string, number>, stop(): Promise<void> }

function load (client: Record<string, any>): Load {
  const state = { running: true }
  const result: Load = { ok: 0, failed: [], servedBy: {}, stop: async () => { state.running = false; await Promise.all(loops) } }
  const loop = async (): Promise<void> => {
    while (state.running) {
      try {
        const { res } = await unary(client, { text: 'x', ms: 1 })
        result.ok++
        result.servedBy[res.servedBy!] = (result.servedBy[res.servedBy!] ?? 0) + 1
      } catch (err) {
        result.failed.push(`${grpc.status[(err as grpc.ServiceError).code]} ${(err as grpc.ServiceError).details}`)
      }
    }
  }
  const loops = Array.from({ length: CONCURRENCY }, loop)
  return result
}

/** `a` behind the delaying proxy, `b` direct, one round_robin channel over both, under load until `a` is gone. */
async function race (t: import('node:test').TestContext, security: Security, a: Started, retries: boolean): Promise<Load> {
  const b = await startGrpc({ security, name: 'b', lameduck: false })
  const proxy = await tcpDelay(a.port, { upMs: ON_THE_WAY_MS })
  const client = new Echo(`ipv4:127.0.0.1:${proxy.port},127.0.0.1:${b.port}`, clientCredentials(security), {
    'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
    'grpc.enable_retries': retries ? 1 : 0,
    ...(security === 'tls' ? { 'grpc.ssl_target_name_override': '127.0.0.1', 'grpc.default_authority': '127.0.0.1' } : {})
  }) as grpc.Client & Record<string, any>
  t.after(async () => { client.close(); await proxy.close(); await Promise.all([a.stop(), b.stop()]) })
  const l = load(client)
  await until(() => (l.servedBy.a ?? 0) > 50 && (l.servedBy.b ?? 0) > 50, 'calls on both servers')
  await a.lameduck!.shutdown()
  const onB = l.servedBy.b ?? 0
  await until(() => (l.servedBy.b ?? 0) > onB + 100, 'calls go on on b')
  await l.stop()
  t.diagnostic(`calls: ${l.ok} ok (a ${l.servedBy.a ?? 0}, b ${l.servedBy.b ?? 0}), ${l.failed.length} failed${l.failed.length === 0 ? '' : `: ${[...new Set(l.failed)].join('; ')}`}`)
  return l
}

for (const security of SECURITIES) {
  test(`${security}: calls on their way when the GOAWAY leaves are refused unprocessed and retried on the other address: 0 failed`, async (t) => {
    const a = await startGrpc({ security, name: 'a' })
    await until(() => a.lameduck!.state === 'serving', 'serving')
    const l = await race(t, security, a, true)
    assert.deepEqual(l.failed, [])
    assert.ok(a.log.lines.some((line) => line.msg.includes('GOAWAY')), 'a told its connections to go')
    assert.equal(a.lameduck!.lifecycle.lastReport?.inflightAtEnd, 0)
  })
}

test('negative control: with transparent retry off the same calls fail as refused — they were on their way', async (t) => {
  const a = await startGrpc({ name: 'a' })
  await until(() => a.lameduck!.state === 'serving', 'serving')
  const l = await race(t, 'plaintext', a, false)
  assert.ok(l.failed.length > 0, 'calls on their way were refused')
  // grpc-js says REFUSED_STREAM two ways, by which of the stream's close and its pending write it sees first.
  assert.ok(l.failed.every((f) => REFUSED.test(f)), l.failed.join('; '))
})
