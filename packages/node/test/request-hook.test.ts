// The per-request hook's bookkeeping: the open-request table (slots reused, an
// end counted once), the coarse start stamp, and the consumer id read from the raw HTTP/1 headers.
import { mock, test } from 'node:test'
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { EventEmitter, once } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { ConsumerTracker, InFlightTracker } from '@lameduck/core'
import { OpenRequests } from '../src/open-requests.ts'
import { COARSE_MS, coarseNow } from '../src/coarse-clock.ts'
import { PASS, RequestHook } from '../src/requests.ts'
import { isPath } from '../src/url-path.ts'
import { startServer, stop } from './helpers.ts'
import { transportClient } from './transports.ts'

test('coarseNow: one Date.now() read serves COARSE_MS; its timer makes the next call read again', () => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 })
  try {
    const real = Date.now
    let reads = 0
    Date.now = () => { reads++; return real() }
    try {
      assert.equal(coarseNow(), 1_000_000)
      mock.timers.tick(COARSE_MS - 1)
      assert.equal(coarseNow(), 1_000_000, 'within the resolution: the cached stamp')
      assert.equal(reads, 1)
      mock.timers.tick(1)
      assert.equal(coarseNow(), 1_000_000 + COARSE_MS, 'after it: the clock read again')
      assert.equal(reads, 2)
    } finally {
      Date.now = real
    }
  } finally {
    mock.timers.tick(COARSE_MS) // the stamp is forgotten, not left cached from the mocked clock for the next test
    mock.timers.reset()
  }
})

test('the consumer tracker never gets a stamp earlier than the request: a consumer stays in the window its full length', () => {
  // The coarse clock may lag the request by up to COARSE_MS; the stamp the tracker gets is rounded up
  // past that, so "seen" and the quiet period count from no earlier than the arrival.
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 2_000_000 })
  try {
    const windowMs = 1_000
    const inflight = new InFlightTracker()
    const tracker = new ConsumerTracker({ windowMs, quietMs: 100, inflight })
    const hook = new RequestHook({ inflight, tracker, routes: false, serveRoutes: false, probe: () => { throw new Error('no probe routes here') } })
    coarseNow() // another request just read the clock: the cached stamp is 2_000_000
    mock.timers.tick(COARSE_MS - 1)
    const arrival = Date.now() // 2_000_009: this request arrives with the cached stamp 9 ms behind it
    const req = { httpVersionMajor: 1, socket: {}, url: '/orders', method: 'GET', rawHeaders: ['host', 'x', 'x-lameduck-consumer', 'orders-client-1'] }
    const res = Object.assign(new EventEmitter(), { setHeader () {}, destroyed: false })
    assert.equal(hook.onRequest(req as unknown as IncomingMessage, res as unknown as ServerResponse), PASS)
    assert.equal(tracker.describe(arrival + windowMs - 1).consumersInWindow, 1, 'still within the window of its arrival')
    res.destroyed = true // as Node does as it emits 'close'
    res.emit('close')
    assert.equal(inflight.count, 0)
    tracker.begin(arrival)
    tracker.told('orders-client-1', arrival + 1)
    assert.match(tracker.pending(arrival + 99) ?? '', /^quiet period/, 'the quiet period counts from the arrival, not from the stale stamp')
    assert.equal(tracker.pending(arrival + 100 + COARSE_MS), null, 'and ends within COARSE_MS of its length')
  } finally {
    mock.timers.tick(COARSE_MS)
    mock.timers.reset()
  }
})

test('OpenRequests: slots are reused, an end is counted once, list() is oldest first, forEach() sees carrier and stamp', () => {
  const open = new OpenRequests<{ id: string }, { k: string }, { c: number }>()
  const conn = { c: 1 }
  const a = open.start({ id: 'a' }, { k: 'ra' }, conn, 30, 1)
  const b = open.start({ id: 'b' }, { k: 'rb' }, conn, 10, 2)
  assert.deepEqual(open.list().map(([r, at]) => [r.id, at]), [['b', 10], ['a', 30]])
  assert.equal(open.end(a), conn)
  assert.equal(open.end(a), undefined, 'a second end of the same slot is a no-op')
  const c = open.start({ id: 'c' }, { k: 'rc' }, conn, 40, 3)
  assert.equal(c, a, 'the freed slot is reused')
  assert.deepEqual(open.list().map(([r]) => r.id), ['b', 'c'])
  const seen: string[] = []
  open.forEach((r, k, conn2, stamp) => { seen.push(`${r.id}:${k.k}:${conn2.c}:${stamp}`) })
  assert.deepEqual(seen.sort(), ['b:rb:1:2', 'c:rc:1:3'])
  open.end(b); open.end(c)
  assert.deepEqual(open.list(), [])
})

/** One raw HTTP/1.1 request with the given header lines; resolves with the response head. */
async function rawGet (url: string, headerLines: string[]): Promise<string> {
  const { port } = new URL(url)
  const socket = connect(Number(port), '127.0.0.1')
  await once(socket, 'connect')
  socket.end(['GET /hello HTTP/1.1', 'host: 127.0.0.1', 'connection: close', ...headerLines, '', ''].join('\r\n'))
  let text = ''
  for await (const chunk of socket) text += String(chunk)
  return text.split('\r\n')[0]!
}

test('the consumer id is read from HTTP/1 raw headers in any case; sent twice it counts as no id', async (t) => {
  const s = await startServer({ earlyOffline: { quietMs: 50 } })
  t.after(() => stop(s))
  assert.equal(await rawGet(s.url, ['X-Lameduck-Consumer: shop-1']), 'HTTP/1.1 200 OK')
  let report = s.lameduck.status().earlyOffline!
  assert.equal(report.consumersInWindow, 1)
  assert.doesNotMatch(report.pending ?? '', /without x-lameduck-consumer/)

  assert.equal(await rawGet(s.url, ['x-lameduck-consumer: shop-2', 'X-LAMEDUCK-CONSUMER: shop-3']), 'HTTP/1.1 200 OK')
  report = s.lameduck.status().earlyOffline!
  assert.equal(report.consumersInWindow, 1, 'a doubled header names no consumer')
  assert.match(report.pending ?? '', /without x-lameduck-consumer/)
})

test('the consumer id is read over HTTP/2 too', async (t) => {
  const s = await startServer({ earlyOffline: { quietMs: 50 } }, 'h2c')
  t.after(() => stop(s))
  const client = transportClient('h2c', s.url)
  t.after(() => client.close())
  const res = await client.request('/hello', { headers: { 'x-lameduck-consumer': 'shop-h2' } })
  assert.equal(res.statusCode, 200)
  const report = s.lameduck.status().earlyOffline!
  assert.equal(report.consumersInWindow, 1)
  assert.doesNotMatch(report.pending ?? '', /without x-lameduck-consumer/)
})

test('isPath: the path itself or with a query string, nothing longer or shorter', () => {
  assert.equal(isPath('/health/ready', '/health/ready'), true)
  assert.equal(isPath('/health/ready?verbose=1', '/health/ready'), true)
  assert.equal(isPath('/health/ready?', '/health/ready'), true)
  assert.equal(isPath('/health/readyz', '/health/ready'), false)
  assert.equal(isPath('/health/ready/', '/health/ready'), false)
  assert.equal(isPath('/health/read', '/health/ready'), false)
  assert.equal(isPath('/health/reads?x', '/health/ready'), false)
  assert.equal(isPath('', '/health/ready'), false)
  assert.equal(isPath('/', '/'), true)
  assert.equal(isPath('/?a', '/'), true)
})
