// The drain mark on responses to requests that arrived before the drain began:
// a response written while draining is the one its consumer reads next, so it
// carries the state and the connection's notice (connection: close or GOAWAY),
// whenever its request came in.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect as h2connect } from 'node:http2'
import { connect } from 'node:net'
import { once } from 'node:events'
import { startServer, stop, until } from './helpers.ts'

test('HTTP/1: a request read while serving and answered while draining gets x-lameduck-state and connection: close', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 2_000 } })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  const socket = connect(Number(new URL(s.url).port), '127.0.0.1')
  t.after(() => socket.destroy())
  const closed = once(socket, 'close')
  let text = ''
  socket.setEncoding('latin1').on('data', (c: string) => { text += c })
  // Two pipelined requests, both read before the drain: the first must leave the socket open for the second.
  socket.write('GET /slow?ms=400 HTTP/1.1\r\nHost: x\r\n\r\nGET /slow?ms=10 HTTP/1.1\r\nHost: x\r\n\r\n')
  await until(() => s.lameduck.lifecycle.inflight.count === 2, 'both requests read')
  const offline = s.lameduck.offline()
  await until(() => (text.match(/HTTP\/1\.1 200/g) ?? []).length === 2, `both answers (got ${JSON.stringify(text)})`)
  const [first, second] = text.split(/(?=HTTP\/1\.1 200)/)
  assert.match(first!, /x-lameduck-state: draining/i)
  assert.match(first!, /connection: keep-alive/i, 'the first pipelined answer keeps the socket for the second')
  assert.match(second!, /x-lameduck-state: draining/i)
  assert.match(second!, /connection: close/i, 'the last request read on the socket closes it')
  await closed
  assert.equal((await offline).outcome, 'offline')
})

test('HTTP/2: a stream opened while serving and answered while draining gets the state and a GOAWAY before it ends', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 2_000 } }, 'h2c')
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  const session = h2connect(s.url)
  t.after(() => session.close())
  const events: string[] = []
  session.on('goaway', () => { events.push('goaway') })
  await once(session, 'connect')
  await new Promise((resolve) => setTimeout(resolve, 300)) // an old enough session: the notice goes at the mark
  const req = session.request({ ':path': '/slow?ms=400' })
  req.on('end', () => { events.push('end') })
  const [headers] = await once(req, 'response') as [Record<string, string>]
  req.resume()
  assert.equal(headers['x-lameduck-state'], undefined, 'answered while serving: not marked (the head went before the drain)')
  await once(req, 'end')
  const slow = session.request({ ':path': '/slow?ms=600' })
  await until(() => s.lameduck.lifecycle.inflight.count === 1, 'the second stream read')
  const offline = s.lameduck.offline()
  const [h2] = await once(slow, 'response') as [Record<string, string>]
  slow.resume()
  assert.equal(h2['x-lameduck-state'], 'draining')
  await until(() => events.includes('goaway'), 'the GOAWAY')
  assert.equal((await offline).outcome, 'offline')
})

test('HTTP/2: a session too young for the notice when its request arrived gets it before that response ends', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 3_000 } }, 'h2c')
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  const offline = s.lameduck.offline()
  await until(() => s.lameduck.state === 'draining', 'draining')
  const session = h2connect(s.url)
  t.after(() => session.close())
  const events: string[] = []
  session.on('goaway', () => { events.push('goaway') })
  const req = session.request({ ':path': '/slow?ms=800' }) // sent at once: the session is younger than 250 ms
  req.on('data', () => {})
  req.on('end', () => { events.push('end') })
  const [headers] = await once(req, 'response') as [Record<string, string>]
  assert.equal(headers['x-lameduck-state'], 'draining')
  await until(() => events.includes('end'), 'the response to end')
  assert.deepEqual(events, ['goaway', 'end'], 'the GOAWAY came before the end of the response')
  session.destroy()
  await offline
})

test('HTTP/1: a request read while serving keeps its connection busy through the drain: the idle sweep leaves it alone', async (t) => {
  // The connection counters are kept only while leaving, so the drain must take them up from the
  // requests already open; counted idle, this socket would be closed under its request by the sweep.
  const s = await startServer({ windows: { clientFetchMs: 3_000 } })
  t.after(() => stop(s))
  ;(s.server as import('node:http').Server).keepAliveTimeout = 100 // the sweep closes an idle socket after a few 500 ms sweeps
  await until(() => s.lameduck.state === 'serving', 'serving')
  const socket = connect(Number(new URL(s.url).port), '127.0.0.1')
  t.after(() => socket.destroy())
  let text = ''
  socket.setEncoding('latin1').on('data', (c: string) => { text += c })
  const closed = once(socket, 'close')
  socket.write('GET /slow?ms=2500 HTTP/1.1\r\nHost: x\r\n\r\n')
  await until(() => s.lameduck.lifecycle.inflight.count === 1, 'the request read')
  const offline = s.lameduck.offline()
  await closed
  assert.match(text, /^HTTP\/1\.1 200/, `the request is answered, not cut by the sweep (got ${JSON.stringify(text)})`)
  assert.match(text, /connection: close/i)
  await offline
})
