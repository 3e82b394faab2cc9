// A connection opened after the window's GOAWAY (a client reconnecting while the listener is still
// open; under load, a TLS handshake that finishes late) never got that GOAWAY. Left alone it took
// calls until the close cut it, and those failed as "Connection dropped" (reconnect.test.ts's TLS
// case under a CPU hog, 2 of 2 suite runs on 2026-11-28). It now gets its own GOAWAY once its first
// call arrived, and that call is answered. The drain is held open by one slow call meanwhile: the
// old code told the late connection only at the close, after the slow call had ended.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type ClientHttp2Session } from 'node:http2'
import { SECURITIES, startGrpc, tlsMaterial, unary, until } from './helpers.ts'

/** The slow call's length: long enough to cover the window and a new connection on a busy machine. */
const HOLD_MS = 6_000

/** One grpc.health.v1 Check for the whole server over a raw HTTP/2 session; resolves with its grpc-status. */
function healthCheck (session: ClientHttp2Session): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': 'POST', ':path': '/grpc.health.v1.Health/Check', 'content-type': 'application/grpc', te: 'trailers' })
    let status: string | undefined
    stream.on('response', (headers) => { if (headers['grpc-status'] !== undefined) status = String(headers['grpc-status']) })
    stream.on('trailers', (trailers) => { status = String(trailers['grpc-status']) })
    stream.on('data', () => {})
    stream.on('error', reject)
    stream.on('close', () => { resolve(status) })
    stream.end(Buffer.from([0, 0, 0, 0, 0]))
  })
}

for (const security of SECURITIES) {
  test(`${security}: a connection opened after the window's GOAWAY is told to go after its first call, while the drain still waits`, async (t) => {
    const a = await startGrpc({ security, name: 'a', lameduck: {} })
    const client = a.client()
    let late: ClientHttp2Session | null = null
    t.after(async () => { late?.destroy(); await a.stop() })
    await until(() => a.lameduck!.state === 'serving', 'serving')

    let slowEnded = false
    const slow = unary(client, { text: 'slow', ms: HOLD_MS }).finally(() => { slowEnded = true })
    await until(() => a.seen.unaryOpen === 1, 'the slow call is open')
    const shutdown = a.lameduck!.shutdown()
    await until(() => a.log.lines.some((line) => line.msg.includes('GOAWAY to')), "the window's GOAWAY went out")

    late = connect(`${security === 'tls' ? 'https' : 'http'}://127.0.0.1:${a.port}`, security === 'tls' ? { ca: tlsMaterial().cert } : {})
    late.on('error', () => {})
    const goaway = once(late, 'goaway').then(() => 'GOAWAY')
    const answer = healthCheck(late)
    const first = await Promise.race([goaway, slow.then(() => 'the slow call ended', () => 'the slow call failed')])
    assert.equal(first, 'GOAWAY', 'the late connection is told to go while the drain still waits for the slow call')
    assert.equal(slowEnded, false)
    assert.equal(await answer, '0', 'its first call is answered')
    await slow
    await shutdown
    assert.equal(a.lameduck!.lifecycle.lastReport?.inflightAtEnd, 0)
  })
}
