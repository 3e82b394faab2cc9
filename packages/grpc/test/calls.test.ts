// Calls of every kind (unary, server, client and bidi streaming), plaintext and TLS, through
// a drain: one started just before /offline completes, and one started during the window.
// Negative control: the same call when the server is shut down the naive way (forceShutdown,
// what NestJS's close does) is lost.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { status as Status } from '@grpc/grpc-js'
import { expectedMessages, KINDS, runCall, SECURITIES, startGrpc, stateOf, until } from './helpers.ts'

for (const security of SECURITIES) {
  for (const kind of KINDS) {
    test(`${security} ${kind}: a call started just before /offline and one started in the window complete; the server then closes`, async (t) => {
      const s = await startGrpc({ security })
      t.after(() => s.stop())
      const lameduck = s.lameduck!
      let drains = 0
      const drain = s.server.drain
      s.server.drain = (port, graceMs) => { drains++; drain.call(s.server, port, graceMs) }
      await until(() => lameduck.state === 'serving', 'serving')
      assert.equal(s.registry.registered('echo').length, 1)
      const client = s.client()

      const before = runCall(client, kind)
      await until(() => lameduck.lifecycle.inflight.count === 1, 'the call in flight')
      const offline = fetch(`${lameduck.adminUrl}/offline?wait=true`, { method: 'POST' })
      await until(() => lameduck.state === 'draining', 'draining')
      const during = runCall(client, kind, { ms: 200 })

      for (const [name, result] of [['before', await before], ['during', await during]] as const) {
        assert.equal(result.code, Status.OK, `${name}: ${result.details}`)
        assert.equal(result.messages.length, expectedMessages(kind), name)
      }
      // The call that started in the window learns the state from its response.
      assert.equal(stateOf(await during), 'draining')
      const done = await (await offline).json() as { report: { outcome: string, inflightAtEnd: number, requestsWhileDraining: number } }
      assert.equal(done.report.outcome, 'offline')
      assert.equal(done.report.inflightAtEnd, 0)
      assert.ok(done.report.requestsWhileDraining >= 1)
      assert.equal(s.registry.registered('echo').length, 0)
      // The window's end: GOAWAY through grpc-js's drain() on the bound port.
      await until(() => drains === 1, 'the final GOAWAY through drain()')

      await lameduck.shutdown()
      assert.equal(lameduck.state, 'stopped')
      const after = await runCall(s.client(), 'unary', { ms: 0 })
      assert.equal(after.code, Status.UNAVAILABLE, 'the server is closed')
    })
  }
}

for (const kind of KINDS) {
  test(`negative control, ${kind}: the same call is lost when the server is shut down without lameduck (forceShutdown)`, async (t) => {
    const s = await startGrpc({ lameduck: false })
    t.after(() => s.stop())
    const client = s.client()
    const before = runCall(client, kind)
    await until(() => s.seen.started === 1, 'the call in its handler')
    s.server.forceShutdown() // the naive SIGTERM handler: stop now
    const result = await before
    assert.notEqual(result.code, Status.OK)
  })
}
