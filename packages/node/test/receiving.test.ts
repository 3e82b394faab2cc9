// A connection whose next request is still arriving (its head, byte by byte)
// has nothing in flight yet, but it is not idle: neither the idle sweep nor the
// close after the drain may destroy it. Node itself counts any byte received as
// activity (its keep-alive timer, closeIdleConnections()).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server as HttpServer } from 'node:http'
import { connect, type Socket } from 'node:net'
import { receivingSockets, keepsConnectionsList } from '../src/receiving.ts'
import { startServer, stop, until } from './helpers.ts'

interface Raw { socket: Socket, text: () => string, closed: () => boolean }

async function rawConnection (url: string): Promise<Raw> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1')
  let text = ''
  let closed = false
  socket.setEncoding('latin1').on('data', (c: string) => { text += c })
  socket.on('error', () => {})
  socket.on('close', () => { closed = true })
  await new Promise((resolve) => socket.once('connect', resolve))
  return { socket, text: () => text, closed: () => closed }
}

async function oneRequest (raw: Raw): Promise<void> {
  const before = raw.text().length
  raw.socket.write('GET /hello HTTP/1.1\r\nHost: x\r\n\r\n')
  await until(() => raw.text().slice(before).includes('{"hello":"world"}'), 'the first answer')
}

test('this Node keeps the per-server connection list the engine reads, and it names a socket with a head half-received', async (t) => {
  const server = createServer(() => {})
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => { server.closeAllConnections(); server.close() })
  assert.ok(keepsConnectionsList(server), 'http.server.connections is gone from this Node: receiving.ts must find another way')
  let accepted: Socket | undefined
  server.on('connection', (s: Socket) => { accepted = s })
  const raw = await rawConnection(`http://127.0.0.1:${(server.address() as { port: number }).port}`)
  t.after(() => raw.socket.destroy())
  await until(() => accepted !== undefined, 'accepted')
  assert.equal(receivingSockets(server).has(accepted!), false, 'a connection that sent nothing is not receiving')
  raw.socket.write('GET / HT')
  await until(() => receivingSockets(server).has(accepted!), 'the half-received head to show')
})

test('the close after the drain leaves a connection whose request head is half-received; the request is answered', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 300 } })
  t.after(() => stop(s))
  ;(s.server as HttpServer).keepAliveTimeout = 30_000 // Node's own timer must not be what ends it here
  await until(() => s.lameduck.state === 'serving', 'serving')
  const raw = await rawConnection(s.url)
  t.after(() => raw.socket.destroy())
  await oneRequest(raw)
  const done = s.lameduck.shutdown('test')
  await until(() => s.lameduck.state === 'draining', 'draining')
  raw.socket.write('GET /hello HT')
  // The app stops listening, then closes its idle connections.
  await until(() => !s.server.listening || raw.closed(), 'the close after the drain')
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(raw.closed(), false, 'the connection with a head on its way was not destroyed')
  raw.socket.write('TP/1.1\r\nHost: x\r\n\r\n')
  await until(() => raw.text().split('{"hello":"world"}').length === 3 || raw.closed(), 'the second answer')
  assert.equal(raw.text().split('{"hello":"world"}').length, 3, `answered: ${JSON.stringify(raw.text())}`)
  await done
})

test('the idle sweep leaves a connection that is receiving a head byte by byte, and closes the idle one beside it', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 60_000 } })
  t.after(() => stop(s))
  // No advertised timeout: Node never closes an idle connection itself, so the sweep is what closes it (after ~6.5 s).
  ;(s.server as HttpServer).keepAliveTimeout = 0
  await until(() => s.lameduck.state === 'serving', 'serving')
  const idle = await rawConnection(s.url)
  const slow = await rawConnection(s.url)
  t.after(() => { idle.socket.destroy(); slow.socket.destroy() })
  await oneRequest(idle)
  await oneRequest(slow)
  const offline = s.lameduck.offline()
  await until(() => s.lameduck.state === 'draining', 'draining')
  // A head that trickles in: Node counts every byte as activity, and so must the sweep.
  const head = 'GET /hello HTTP/1.1\r\nHost: x\r\nX-Pad: ' + 'p'.repeat(2_000)
  let sent = 0
  const trickle = setInterval(() => { if (sent < head.length) slow.socket.write(head[sent++]!) }, 50)
  t.after(() => clearInterval(trickle))
  await until(() => idle.closed(), 'the idle connection to be swept')
  assert.equal(slow.closed(), false, 'the connection receiving a head was not swept with it')
  clearInterval(trickle)
  slow.socket.write(head.slice(sent) + '\r\n\r\n')
  await until(() => slow.text().split('{"hello":"world"}').length === 3 || slow.closed(), 'the answer')
  assert.equal(slow.text().split('{"hello":"world"}').length, 3, `answered: ${JSON.stringify(slow.text())}`)
  assert.match(slow.text(), /x-lameduck-state: draining[\s\S]*connection: close/i)
  s.lameduck.online().catch(() => {})
  await offline.catch(() => {})
})
