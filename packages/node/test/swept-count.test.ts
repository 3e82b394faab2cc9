// While serving, attach() counts an HTTP/1 request without a listener on it: the
// open-request table is swept for responses that are done. These tests hold the
// count to what a listener would say: whichever way a request ends (answered, the
// app's destroy(), the client gone), across many sweeps; and a request counted
// that way is still waited for by a drain that starts while it is open.
import { mock, test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type ServerResponse } from 'node:http'
import { Client } from 'undici'
import { memoryRegistry, silentLogger } from '@lameduck/core'
import { attach, type LameduckHandle } from '@lameduck/node'
import { OpenRequests } from '../src/open-requests.ts'
import { until } from './helpers.ts'

interface Gated { url: string, lameduck: LameduckHandle, held: ServerResponse[], close: () => Promise<void> }

/** A server whose /hold requests wait for the test to answer them; everything else is answered at once. */
async function gatedServer (maxRequestMs = 5_000): Promise<Gated> {
  const held: ServerResponse[] = []
  const server = createServer((req, res) => {
    if (req.url === '/hold') { held.push(res); return }
    res.end('ok')
  })
  const lameduck = await attach(server, {
    service: 'orders', host: '127.0.0.1', registry: memoryRegistry(), windows: { clientFetchMs: 100 }, warmupMs: 0, maxRequestMs, signals: false, admin: { port: 0 }, logger: silentLogger
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  await until(() => lameduck.state === 'serving', 'serving')
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    lameduck,
    held,
    close: async () => {
      for (const res of held) if (!res.writableEnded) res.destroy()
      await lameduck.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

test('HTTP/1 while serving: the in-flight count follows answered, destroyed and abandoned requests across many sweeps', async (t) => {
  const s = await gatedServer()
  t.after(() => s.close())
  const clients = [0, 1, 2, 3].map(() => new Client(s.url))
  t.after(() => Promise.all(clients.map((c) => c.destroy())))
  const gone = new AbortController()
  const answers = [0, 1, 2].map((i) => clients[i]!.request({ path: '/hold', method: 'GET', ...(i === 2 ? { signal: gone.signal } : {}) }))
  answers[2]!.catch(() => {}) // aborted below
  await until(() => s.held.length === 3, 'three requests held')
  // Far more quick requests than the table's smallest sweep size: sweeps run among the held ones.
  for (let i = 0; i < 50; i++) await (await clients[3]!.request({ path: '/hello', method: 'GET' })).body.dump()
  assert.equal(s.lameduck.lifecycle.inflight.count, 3, 'the held requests, and none of the 50 answered')
  assert.equal(s.lameduck.status().inflight, 3)

  s.held[0]!.end('late')
  await (await answers[0]!).body.dump()
  await until(() => s.lameduck.lifecycle.inflight.count === 2, 'the answered request no longer counted')

  s.held[1]!.destroy() // the app gives up on it
  assert.equal(s.lameduck.lifecycle.inflight.count, 1, 'a response the app destroyed is done at once')
  await assert.rejects(answers[1]!)

  gone.abort() // the client gives up on the last one: its connection closes
  await until(() => s.lameduck.lifecycle.inflight.count === 0, 'the abandoned request no longer counted')
  assert.equal(s.lameduck.status().requestsTotal, 53)
})

test('HTTP/1: a request counted while serving holds the drain; it gets the drain mark and the in-flight wait ends with it', async (t) => {
  const s = await gatedServer()
  t.after(() => s.close())
  const [client, other] = [new Client(s.url), new Client(s.url)]
  t.after(() => Promise.all([client.destroy(), other.destroy()]))
  const answer = client.request({ path: '/hold', method: 'GET' })
  await until(() => s.held.length === 1, 'the request held')
  for (let i = 0; i < 20; i++) await (await other.request({ path: '/hello', method: 'GET' })).body.dump()
  let settled = false
  const offline = s.lameduck.offline({ reason: 'test' }).finally(() => { settled = true })
  await until(() => s.lameduck.lifecycle.drain?.phase === 'inflight', 'the window over, the drain waiting for the request in flight')
  assert.equal(settled, false, 'the offline sequence waits for the held request')
  assert.equal(s.lameduck.status().inflight, 1)
  s.held[0]!.end('late')
  const res = await answer
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers['x-lameduck-state'], 'draining', 'the request read before the drain carries its mark')
  await res.body.dump()
  const report = await offline
  assert.equal(report.outcome, 'offline')
  assert.equal(report.inflightAtEnd, 0)
})

test('OpenRequests: a sweep ends only what is done, and is due when the table is full at twice what a sweep left open', () => {
  const ended: Array<{ c: number }> = []
  const open = new OpenRequests<{ id: number }, { done: boolean }, { c: number }>({ ended: (k) => k.done, onEnd: (c) => { ended.push(c) } })
  const conn = { c: 1 }
  const carriers: Array<{ done: boolean }> = []
  const add = (): void => { const k = { done: false }; carriers.push(k); open.counted({ id: carriers.length - 1 }, k, conn, 0, 0) }
  for (let i = 0; i < 8; i++) add()
  for (const k of carriers.slice(0, 6)) k.done = true
  add() // the table full at eight: this start sweeps first
  assert.deepEqual(ended, Array(6).fill(conn), 'each done request handed over with its connection')
  assert.deepEqual(open.list().map(([r]) => r.id).sort(), [6, 7, 8])
  for (let i = 0; i < 5; i++) add() // the five slots left free
  assert.equal(ended.length, 6, 'no sweep while a slot was free')
  add() // full again: a sweep finds nothing done, and the table may grow to sixteen
  assert.equal(ended.length, 6)
  for (const k of carriers) k.done = true
  add()
  assert.equal(ended.length, 6, 'eight open at that sweep: none is due before the table holds sixteen')
  assert.equal(open.sweep(), 1, 'a sweep asked for directly ends the rest, all but the newest')
  carriers.at(-1)!.done = true
  assert.equal(open.sweep(), 0)
  assert.equal(ended.length, carriers.length)
})

test('OpenRequests: a done request is not held on a quiet server: the idle sweep ends it', () => {
  mock.timers.enable({ apis: ['setTimeout'] })
  try {
    let ended = 0
    const open = new OpenRequests<object, { done: boolean }, object>({ ended: (k) => k.done, onEnd: () => { ended++ } })
    const k = { done: false }
    open.counted({}, k, {}, 0, 0)
    mock.timers.tick(1_000)
    assert.equal(ended, 0, 'still open at the first idle sweep')
    k.done = true
    mock.timers.tick(1_000)
    assert.equal(ended, 1, 'ended by the next one, with no request or count read to trigger it')
    assert.deepEqual(open.list(), [])
  } finally {
    mock.timers.reset()
  }
})
