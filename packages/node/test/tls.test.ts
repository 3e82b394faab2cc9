// TLS (https, HTTP/2 over TLS): the idle sweep must look at the socket that
// carries the requests. The raw TCP socket under a TLS socket never sees one,
// so tracking it (as the Fastify plugin once did) closed busy TLS connections
// after two sweeps and cut their requests.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startServer, stop, until } from './helpers.ts'
import { transportClient, type Transport } from './transports.ts'

for (const transport of ['https', 'h2'] as Transport[]) {
  test(`${transport}: a request in flight through the sweeps completes; the idle connection is closed`, async (t) => {
    const s = await startServer({ windows: { clientFetchMs: 1_500 }, maxRequestMs: 5_000 }, transport)
    t.after(() => stop(s))
    // HTTPS: the idle connection goes when its Keep-Alive timeout (3 s, undici: 1 s idle) runs out; h2: the sweep's GOAWAY.
    ;(s.server as { keepAliveTimeout?: number }).keepAliveTimeout = 3_000
    await until(() => s.lameduck.state === 'serving', 'serving')
    const busy = transportClient(transport, s.url)
    const idle = transportClient(transport, s.url)
    t.after(() => Promise.all([busy.close(), idle.close()]))
    assert.equal((await idle.request('/hello')).statusCode, 200)
    assert.equal((await busy.request('/hello')).statusCode, 200)

    const offline = s.lameduck.offline()
    await until(() => s.lameduck.state === 'draining', 'draining')
    // Outlives three idle sweeps (500 ms apart): a busy connection must never look idle.
    const slow = await busy.request('/slow?ms=1300')
    assert.equal(slow.statusCode, 200)
    assert.deepEqual(JSON.parse(slow.body), { slept: 1300 })
    assert.equal(slow.headers['x-lameduck-state'], 'draining')
    await until(() => idle.disconnects >= 1, 'the idle connection to be closed')
    assert.equal((await offline).outcome, 'offline')
  })
}
