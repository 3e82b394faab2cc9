// An HTTP/2 app on the stream API (`server.on('stream')`, no 'request' listener)
// never sees Node's request/response objects: the engine counts and marks its
// streams at the stream level, so they drain like requests.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect, createSecureServer, createServer, type ClientHttp2Session, type Http2Server, type ServerHttp2Stream, type IncomingHttpHeaders } from 'node:http2'
import { memoryRegistry, silentLogger, type Logger } from '@lameduck/core'
import { attach, type AttachOptions, type LameduckHandle } from '@lameduck/node'
import { until } from './helpers.ts'
import { tlsMaterial } from './transports.ts'

/** /hello, /slow?ms=N (answers after N ms), anything else 404: on raw streams. */
function onStream (stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
  const url = new URL(headers[':path'] ?? '/', 'http://x')
  const reply = (body: unknown): void => {
    if (stream.destroyed) return
    stream.respond({ ':status': 200, 'content-type': 'application/json' })
    stream.end(JSON.stringify(body))
  }
  if (url.pathname === '/hello') reply({ hello: 'world' })
  else if (url.pathname === '/slow') setTimeout(() => reply({ slow: true }), Number(url.searchParams.get('ms') ?? 500))
  else { stream.respond({ ':status': 404 }); stream.end() }
}

interface Started { lameduck: LameduckHandle, url: string, close: () => Promise<void> }

async function start (secure: boolean, options: Partial<AttachOptions> = {}): Promise<Started> {
  const server: Http2Server = secure ? createSecureServer(tlsMaterial()) as unknown as Http2Server : createServer()
  server.on('stream', onStream)
  const lameduck = await attach(server, { service: 'orders', host: '127.0.0.1', registry: memoryRegistry(), windows: { clientFetchMs: 600 }, warmupMs: 0, signals: false, admin: { port: 0 }, logger: silentLogger, ...options })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await until(() => lameduck.state === 'serving', 'serving')
  return {
    lameduck,
    url: `${secure ? 'https' : 'http'}://127.0.0.1:${port}`,
    close: async () => { await lameduck.close(); await new Promise<void>((resolve) => server.close(() => resolve())) }
  }
}

interface Answer { status: number, headers: IncomingHttpHeaders, body: string }

function get (session: ClientHttp2Session, path: string, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path, ':method': method })
    let headers: IncomingHttpHeaders = {}
    let body = ''
    stream.setEncoding('utf8')
    stream.on('response', (h) => { headers = h })
    stream.on('data', (chunk: string) => { body += chunk })
    stream.on('end', () => resolve({ status: Number(headers[':status']), headers, body }))
    stream.on('error', reject)
    stream.end()
  })
}

function client (url: string): ClientHttp2Session & { goaways: number } {
  const session = connect(url, url.startsWith('https') ? { ca: tlsMaterial().cert } : {}) as ClientHttp2Session & { goaways: number }
  session.goaways = 0
  session.on('goaway', () => { session.goaways++ })
  session.on('error', () => {})
  return session
}

for (const secure of [false, true]) {
  const name = secure ? 'h2' : 'h2c'

  test(`${name} stream API: streams are counted in flight, marked while draining, and the drain waits for them`, async (t) => {
    const s = await start(secure, { maxRequestMs: 10_000 })
    t.after(() => s.close())
    const first = client(s.url)
    t.after(() => first.close())
    const hello = await get(first, '/hello')
    assert.equal(hello.status, 200)
    assert.equal(hello.headers['x-lameduck-state'], undefined)
    assert.equal(s.lameduck.lifecycle.inflight.count, 0)

    // Outlives the window (600 ms): the drain must wait for it.
    const slowSentAt = Date.now()
    const slow = get(first, '/slow?ms=1200')
    await until(() => s.lameduck.lifecycle.inflight.count === 1, 'the slow stream counted in flight')
    const offline = s.lameduck.offline()
    await until(() => s.lameduck.state === 'draining', 'draining')
    await new Promise((resolve) => setTimeout(resolve, 300)) // past the GOAWAY's minimum session age (250 ms)
    const second = client(s.url)
    t.after(() => second.close())
    const during = await get(second, '/hello')
    assert.equal(during.status, 200)
    assert.equal(during.headers['x-lameduck-state'], 'draining', 'the stream response carries the drain mark')
    await until(() => second.goaways >= 1, 'a GOAWAY on the draining session')

    const slowAnswer = await slow
    const report = await offline
    assert.equal(slowAnswer.status, 200, 'the in-flight stream completed')
    assert.equal(report.inflightAtEnd, 0)
    // The stream is answered 1200 ms after it was sent at the earliest; the window alone would end sooner.
    assert.ok(report.endedAt >= slowSentAt + 1200, `offline ${report.endedAt - slowSentAt} ms after the stream was sent: it waited for the stream`)
    assert.ok(report.inflightWaitMs > 0, 'the drain waited for the stream past the window')
  })

  test(`${name} stream API: the probe routes are answered on the stream, before the app`, async (t) => {
    const s = await start(secure)
    t.after(() => s.close())
    const session = client(s.url)
    t.after(() => session.close())
    const ready = await get(session, '/health/ready')
    assert.equal(ready.status, 200)
    assert.equal(JSON.parse(ready.body).state, 'serving')
    const head = await get(session, '/health/live', 'HEAD')
    assert.equal(head.status, 200)
    assert.equal(head.body, '')
    const offline = s.lameduck.offline()
    await until(() => s.lameduck.state === 'draining', 'draining')
    assert.equal((await get(session, '/health/ready')).status, 503)
    await offline
  })
}

test('stream API: maxRequestMs names the stream it left open', async (t) => {
  const lines: string[] = []
  const logger: Logger = { ...silentLogger, warn: (_o: object, msg?: string) => { lines.push(msg ?? '') } }
  const s = await start(false, { windows: { clientFetchMs: 100 }, maxRequestMs: 200, logger })
  t.after(() => s.close())
  const session = client(s.url)
  t.after(() => session.destroy())
  get(session, '/slow?ms=3000').catch(() => {}) // destroyed unanswered at the end
  await until(() => s.lameduck.lifecycle.inflight.count === 1, 'in flight')
  const report = await s.lameduck.offline()
  assert.equal(report.inflightAtEnd, 1)
  assert.ok(lines.some((l) => /GET \/slow\?ms=3000 \(open \d+ ms\)/.test(l)), lines.join('\n'))
  session.destroy()
})
