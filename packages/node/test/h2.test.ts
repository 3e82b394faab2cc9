// HTTP/2 (h2c and h2 over TLS): `connection: close` is invalid on h2 (Node drops it
// with an UnsupportedWarning), so a draining session is told to go with a
// graceful GOAWAY (NO_ERROR) once its response is done; clients open their next
// session fresh, and sessions idle through the sweeps are closed.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startServer, stop, until } from './helpers.ts'
import { transportClient, type Transport } from './transports.ts'

for (const transport of ['h2c', 'h2'] as Transport[]) {
  test(`${transport}: while draining each response carries x-lameduck-state, no connection header, and its session gets a GOAWAY; 0 lost`, async (t) => {
    const warnings: Error[] = []
    const onWarning = (w: Error): void => { warnings.push(w) }
    process.on('warning', onWarning)
    t.after(() => process.off('warning', onWarning))
    const s = await startServer({ windows: { clientFetchMs: 800 } }, transport)
    t.after(() => stop(s))
    await until(() => s.lameduck.state === 'serving', 'serving')
    const client = transportClient(transport, s.url)
    t.after(() => client.close())
    const first = await client.request('/hello')
    assert.equal(first.statusCode, 200)
    assert.equal(first.headers['x-lameduck-state'], undefined)
    assert.equal(client.connects, 1)

    const offline = s.lameduck.offline()
    await until(() => s.lameduck.state === 'draining', 'draining')
    let served = 0
    while (s.lameduck.state === 'draining') {
      const res = await client.request('/hello')
      assert.equal(res.statusCode, 200, 'never lost, never 503')
      // The last one may be answered just after the window ended.
      assert.match(String(res.headers['x-lameduck-state']), /^(draining|offline)$/)
      assert.equal(res.headers.connection, undefined)
      served++
    }
    assert.equal((await offline).outcome, 'offline')
    assert.ok(served >= 2, `served ${served} while draining`)
    assert.ok(client.connects >= 2, `the client opened its next session fresh (${client.connects} sessions)`)
    assert.deepEqual(warnings.filter((w) => w.name === 'UnsupportedWarning').map((w) => w.message), [], 'no invalid connection-specific header')
  })

  test(`${transport}: a session idle through the sweeps is closed; a busy one completes its stream`, async (t) => {
    const s = await startServer({ windows: { clientFetchMs: 1_500 }, maxRequestMs: 5_000 }, transport)
    t.after(() => stop(s))
    await until(() => s.lameduck.state === 'serving', 'serving')
    const idle = transportClient(transport, s.url)
    const busy = transportClient(transport, s.url)
    t.after(() => Promise.all([idle.close(), busy.close()]))
    await idle.request('/hello')
    await busy.request('/hello')
    const offline = s.lameduck.offline()
    const slow = await busy.request('/slow?ms=1200')
    assert.equal(slow.statusCode, 200)
    assert.equal(slow.headers['x-lameduck-state'], 'draining')
    await until(() => idle.disconnects >= 1, 'the idle session to be closed')
    await offline
  })
}

test('h2 (undici allowH2): concurrent requests through a drain all complete; the client moves to fresh sessions', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 800 } }, 'h2')
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  const client = transportClient('h2', s.url)
  t.after(() => client.close())
  await client.request('/hello')
  const offline = s.lameduck.offline()
  const failures: unknown[] = []
  let ok = 0
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (s.lameduck.state !== 'offline') {
      try {
        const res = await client.request('/slow?ms=5')
        if (res.statusCode === 200) ok++; else failures.push(res.statusCode)
      } catch (err) { failures.push(err) }
    }
  }))
  await offline
  assert.deepEqual(failures, [], '0 lost')
  assert.ok(ok > 8, `${ok} served while draining`)
  assert.ok(client.connects >= 2, `${client.connects} sessions`)
})
