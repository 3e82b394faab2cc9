// attachGrpc() beside the app's own server interceptors. Its interceptor comes last in grpc-js's
// list, so it gets the app's wrapper of the call: it finds grpc-js's own call under it (nextCall)
// and counts the call by its HTTP/2 stream. An app interceptor that hides the call behind an
// object of its own (no nextCall) leaves nothing to read: the call is counted through a wrapper
// instead. Either way the drain waits for a call in flight, a call in the window is marked, and
// every count returns to 0.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as grpc from '@grpc/grpc-js'
import { runCall, startGrpc, stateOf, until, type Kind } from './helpers.ts'

/** Passes every call on through grpc-js's ServerInterceptingCall (it keeps nextCall). */
const passThrough: grpc.ServerInterceptor = (_method, call) => new grpc.ServerInterceptingCall(call)

/** Hides the call behind a plain object that forwards every method: nothing of grpc-js's call shows. */
const opaque: grpc.ServerInterceptor = (_method, call) => {
  const hidden: grpc.ServerInterceptingCallInterface = {
    start: (listener) => { call.start(listener) },
    sendMetadata: (metadata) => { call.sendMetadata(metadata) },
    sendMessage: (message, callback) => { call.sendMessage(message, callback) },
    sendStatus: (status) => { call.sendStatus(status) },
    startRead: () => { call.startRead() },
    getPeer: () => call.getPeer(),
    getDeadline: () => call.getDeadline(),
    getHost: () => call.getHost(),
    getAuthContext: () => call.getAuthContext(),
    getConnectionInfo: () => call.getConnectionInfo(),
    getMetricsRecorder: () => call.getMetricsRecorder()
  }
  return hidden as grpc.ServerInterceptingCall
}

for (const [name, interceptor] of [['a pass-through app interceptor', passThrough], ['an app interceptor that hides the call', opaque]] as const) {
  for (const kind of ['unary', 'bidi'] as Kind[]) {
    test(`${name}, ${kind}: calls counted until they end, the drain waits for one, a call in the window is marked`, async (t) => {
      const s = await startGrpc({ serverOptions: { interceptors: [interceptor] } })
      t.after(() => s.stop())
      const lameduck = s.lameduck!
      await until(() => lameduck.state === 'serving', 'serving')
      const client = s.client()
      // Counted, then uncounted.
      assert.equal((await runCall(client, kind, { ms: 0 })).code, grpc.status.OK)
      await until(() => lameduck.lifecycle.inflight.count === 0, 'the first call uncounted')

      const before = runCall(client, kind, { ms: 600 })
      await until(() => lameduck.lifecycle.inflight.count === 1, 'the call in flight counted')
      const offline = fetch(`${lameduck.adminUrl}/offline?wait=true`, { method: 'POST' })
      await until(() => lameduck.state === 'draining', 'draining')
      const during = await runCall(client, kind, { ms: 0 })
      assert.equal(during.code, grpc.status.OK)
      assert.equal(stateOf(during), 'draining', 'a call in the window learns the state')
      assert.equal((await before).code, grpc.status.OK)
      const done = await (await offline).json() as { report: { outcome: string, inflightAtEnd: number } }
      assert.equal(done.report.outcome, 'offline')
      assert.equal(done.report.inflightAtEnd, 0)
      assert.equal(lameduck.lifecycle.inflight.count, 0)
    })
  }
}
