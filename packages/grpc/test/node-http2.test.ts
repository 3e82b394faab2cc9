// gRPC served by a node:http2 server (ConnectRPC's connect-node, grpc-web gateways, hand-rolled
// gRPC): attach() from @lameduck/node already covers it, no attachGrpc() needed. A real
// grpc-js client makes gRPC-framed calls (length-prefixed messages, grpc-status trailers) to a
// node:http2 server on the stream API and on the compatibility API (what connect-node uses);
// a call in flight when /offline starts completes, one in the window carries the state.
// Negative control: the same call is lost when the app closes the naive way (sessions destroyed).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Http2Server, type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Session, type ServerHttp2Stream, type IncomingHttpHeaders } from 'node:http2'
import type { AddressInfo } from 'node:net'
import * as grpc from '@grpc/grpc-js'
import { memoryRegistry, silentLogger } from '@lameduck/core'
import { attach, type LameduckHandle } from '@lameduck/node'
import { until } from './helpers.ts'

const PATH = '/lameduck.json.Slow/Sleep'
interface Req { ms: number }
interface Res { slept: number }

const json = <T> () => ({ serialize: (v: T) => Buffer.from(JSON.stringify(v)), deserialize: (b: Buffer) => JSON.parse(b.toString()) as T })
const SlowClient = grpc.makeGenericClientConstructor({
  Sleep: { path: PATH, requestStream: false, responseStream: false, requestSerialize: json<Req>().serialize, requestDeserialize: json<Req>().deserialize, responseSerialize: json<Res>().serialize, responseDeserialize: json<Res>().deserialize }
}, 'Slow')

function frame (message: Buffer): Buffer {
  const out = Buffer.alloc(5 + message.length)
  out.writeUInt32BE(message.length, 1)
  message.copy(out, 5)
  return out
}

function unframe (body: Buffer): Req {
  return JSON.parse(body.subarray(5, 5 + body.readUInt32BE(1)).toString()) as Req
}

type Api = 'stream' | 'compat'

/** A gRPC unary method by hand: read the framed request, sleep, answer with a framed message and grpc-status 0. */
function grpcServer (api: Api, seen: { received: number }): Http2Server {
  const server = createServer()
  if (api === 'stream') {
    server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const req = unframe(Buffer.concat(chunks))
        seen.received++
        setTimeout(() => {
          if (stream.destroyed) return
          stream.respond({ ':status': 200, 'content-type': 'application/grpc+json' }, { waitForTrailers: true })
          stream.on('wantTrailers', () => { stream.sendTrailers({ 'grpc-status': '0' }) })
          stream.end(frame(Buffer.from(JSON.stringify({ slept: req.ms }))))
        }, headers[':path'] === PATH ? req.ms : 0)
      })
    })
  } else {
    server.on('request', (req: Http2ServerRequest, res: Http2ServerResponse) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const body = unframe(Buffer.concat(chunks))
        seen.received++
        setTimeout(() => {
          if (res.stream.destroyed) return
          res.writeHead(200, { 'content-type': 'application/grpc+json' })
          res.addTrailers({ 'grpc-status': '0' })
          res.end(frame(Buffer.from(JSON.stringify({ slept: body.ms }))))
        }, body.ms)
      })
    })
  }
  return server
}

function sleep (client: grpc.Client & Record<string, any>, ms: number): Promise<{ res?: Res, code: number, headers: grpc.Metadata | null }> {
  return new Promise((resolve) => {
    let headers: grpc.Metadata | null = null
    let res: Res | undefined
    const call = client.Sleep({ ms }, (err: grpc.ServiceError | null, r: Res) => { res = r; if (err !== null) resolve({ code: err.code, headers }) })
    call.on('metadata', (m: grpc.Metadata) => { headers = m })
    call.on('status', (s: grpc.StatusObject) => { if (s.code === grpc.status.OK) setImmediate(() => { resolve({ res, code: s.code, headers }) }) })
  })
}

async function start (api: Api, lameduck: boolean): Promise<{ server: Http2Server, handle: LameduckHandle | null, client: grpc.Client & Record<string, any>, sessions: Set<ServerHttp2Session>, seen: { received: number } }> {
  const seen = { received: 0 }
  const server = grpcServer(api, seen)
  const sessions = new Set<ServerHttp2Session>()
  server.on('session', (s: ServerHttp2Session) => { sessions.add(s); s.once('close', () => sessions.delete(s)) })
  const handle = lameduck
    ? await attach(server, { service: 'slow', host: '127.0.0.1', registry: memoryRegistry(), windows: { endpointLagMs: 300 }, warmupMs: 0, signals: false, admin: false, terminationMessage: false, logger: silentLogger })
    : null
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const client = new SlowClient(`127.0.0.1:${(server.address() as AddressInfo).port}`, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>
  return { server, handle, client, sessions, seen }
}

for (const api of ['stream', 'compat'] as const) {
  test(`node:http2 ${api} API through attach(): a gRPC call in flight at /offline completes, one in the window is marked, the drain waits for them`, async (t) => {
    const { server, handle, client } = await start(api, true)
    t.after(async () => { client.close(); await handle!.close(); server.close() })
    await until(() => handle!.state === 'serving', 'serving')
    const before = sleep(client, 400)
    await until(() => handle!.lifecycle.inflight.count === 1, 'the gRPC call counted in flight')
    const offline = handle!.offline()
    await until(() => handle!.state === 'draining', 'draining')
    const during = sleep(client, 100)
    assert.deepEqual((await before).res, { slept: 400 })
    const marked = await during
    assert.deepEqual(marked.res, { slept: 100 })
    assert.equal(marked.headers?.get('x-lameduck-state')[0], 'draining')
    const report = await offline
    assert.equal(report.inflightAtEnd, 0)
    assert.equal(report.requestsWhileDraining, 1)
    await handle!.shutdown()
    assert.equal(handle!.state, 'stopped')
  })
}

test('negative control: without lameduck, the app closing the naive way (sessions destroyed, as at process exit) loses the call', async (t) => {
  const { server, client, sessions, seen } = await start('stream', false)
  t.after(() => { client.close(); server.close() })
  const before = sleep(client, 400)
  await until(() => seen.received === 1, 'the call in its handler')
  server.close()
  for (const s of sessions) s.destroy()
  assert.notEqual((await before).code, grpc.status.OK)
})
