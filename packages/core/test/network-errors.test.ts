import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { request } from 'node:http'
import { isConnectFailure, isReset, networkErrorCode, networkErrorKind, sleep, virtualClock } from '@lameduck/core'

const withCode = (code: string): Error => Object.assign(new Error(code), { code })

test('network errors: kinds by code, on the error or its cause', () => {
  assert.equal(networkErrorKind(withCode('ECONNREFUSED')), 'refused')
  assert.equal(networkErrorKind(new TypeError('fetch failed', { cause: withCode('ENOTFOUND') })), 'dns')
  assert.equal(networkErrorKind(withCode('UND_ERR_CONNECT_TIMEOUT')), 'unreachable')
  assert.equal(networkErrorKind(withCode('UND_ERR_SOCKET')), 'reset')
  assert.equal(networkErrorKind(withCode('UND_ERR_HEADERS_TIMEOUT')), 'timeout')
  assert.equal(networkErrorKind(Object.assign(new Error('x'), { name: 'AbortError' })), 'aborted')
  // Not network failures: a status, a parse error, an inherited property name, nothing at all.
  for (const err of [withCode('LAMEDUCK_ERR_STATUS'), new SyntaxError('x'), withCode('constructor'), undefined, null, 'text']) {
    assert.equal(networkErrorKind(err), undefined)
    assert.equal(isConnectFailure(err), false)
    assert.equal(isReset(err), false)
  }
  assert.equal(networkErrorCode(new Error('x', { cause: withCode('EPIPE') })), 'EPIPE')
  assert.equal(networkErrorCode(null), '')
  assert.ok(isConnectFailure(withCode('EHOSTUNREACH')) && !isReset(withCode('EHOSTUNREACH')))
  assert.ok(isReset(withCode('ECONNRESET')) && !isConnectFailure(withCode('ECONNRESET')))
})

test('network errors: a real reset is read as one', async () => {
  const server = createServer((socket) => socket.resetAndDestroy()).listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const { port } = server.address() as { port: number }
  const get = (p: number): Promise<unknown> => new Promise((resolve) => {
    request({ host: '127.0.0.1', port: p, path: '/' }, () => resolve(undefined)).on('error', resolve).end()
  })
  const reset = await get(port)
  assert.ok(isReset(reset), String(reset))
  assert.equal(isConnectFailure(reset), false)
  await new Promise((resolve) => server.close(resolve))
})

test('sleep: rejects with the reason on abort, or resolves with resolveOnAbort', async () => {
  const clock = virtualClock()
  const ac = new AbortController()
  const rejecting = sleep(clock, 1000, ac.signal)
  const resolving = sleep(clock, 1000, ac.signal, { resolveOnAbort: true })
  ac.abort(new Error('stop'))
  await assert.rejects(rejecting, /stop/)
  await resolving
  assert.equal(clock.pending, 0)
  await sleep(clock, 1000, ac.signal, { resolveOnAbort: true }) // already aborted: at once
  const timed = sleep(clock, 1000)
  await clock.advance(1000)
  await timed
})
