// Requests Node delivers through 'checkContinue' or 'checkExpectation' instead of
// 'request' (an app that listens for them takes over the `Expect` handling): they
// are requests like any other, counted in flight, marked while draining, and
// their sockets are not idle while the body is still coming.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { memoryRegistry, silentLogger } from '@lameduck/core'
import { attach } from '@lameduck/node'
import { until } from './helpers.ts'

/** An upload endpoint that takes over `Expect: 100-continue`: it answers with the body's length. */
function uploadServer () {
  const server = createServer()
  const upload = (req: IncomingMessage, res: ServerResponse): void => {
    res.writeContinue()
    let bytes = 0
    req.on('data', (chunk: Buffer) => { bytes += chunk.length })
    req.on('end', () => { res.setHeader('content-type', 'text/plain'); res.end(`got ${bytes}`) })
  }
  server.on('checkContinue', upload)
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    if (req.headers.expect !== 'x-slow') { res.writeHead(417).end(); return }
    upload(req, res)
  })
  return server
}

function rawClient (port: number): { socket: Socket, received: () => string, closed: () => boolean } {
  const socket = connect(port, '127.0.0.1')
  let text = ''
  let closed = false
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => { text += chunk })
  socket.on('error', () => {})
  socket.on('close', () => { closed = true })
  return { socket, received: () => text, closed: () => closed }
}

for (const expect of ['100-continue', 'x-slow']) {
  test(`an upload with Expect: ${expect} is in flight until its body is read: the drain waits for it and its socket is not closed under it`, async (t) => {
    const server = uploadServer()
    server.keepAliveTimeout = 1_000
    const lameduck = await attach(server, { service: 'up', host: '127.0.0.1', registry: memoryRegistry(), windows: { clientFetchMs: 300 }, warmupMs: 0, signals: false, admin: false, logger: silentLogger, maxRequestMs: 60_000 })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.after(async () => { await lameduck.close(); server.closeAllConnections(); server.close() })
    await until(() => lameduck.state === 'serving', 'serving')
    const { port } = server.address() as { port: number }
    const c = rawClient(port)
    t.after(() => { c.socket.destroy() })
    c.socket.write(`POST /upload HTTP/1.1\r\nHost: x\r\nExpect: ${expect}\r\nContent-Length: 10\r\n\r\n`)
    if (expect === '100-continue') await until(() => c.received().includes('100 Continue'), 'the 100 Continue')
    c.socket.write('12345')
    await until(() => lameduck.lifecycle.inflight.count === 1, 'the upload counted in flight')
    const done = lameduck.shutdown('test')
    // Past the window: a request nobody counted would let the close run now and destroy its socket.
    await until(() => lameduck.status().drain?.phase === 'inflight' || c.closed(), 'the drain to wait for the upload (or the socket to be closed under it)')
    assert.equal(c.closed(), false, 'the socket of the upload in progress was not closed')
    c.socket.write('67890')
    await until(() => c.received().includes('got 10') || c.closed(), 'the answer')
    assert.match(c.received(), /HTTP\/1\.1 200 OK[\s\S]*x-lameduck-state: draining[\s\S]*got 10/i, 'answered in full, with the drain mark')
    await done
    assert.equal(lameduck.lifecycle.lastReport?.inflightAtEnd, 0)
  })
}
