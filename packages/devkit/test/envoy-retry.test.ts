// The local Envoy's upstream retries, as real Envoy under Istio's inbound route: a retry
// policy `reset-before-request` with 2 retries (istio retry.go defaultInboundRetryOn),
// which retries only when no request byte went upstream (RetryStateImpl::wouldRetryFromReset).
// A request the app already received is never sent again: the client gets Envoy's 503.
import assert from 'node:assert/strict'
import { createServer, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { InvalidOptionError } from '@lameduck/core'
import { startEnvoy } from '../src/envoy/index.ts'
import { raw } from './envoy-helpers.ts'

interface ResettingApp { url: string, received: string[], close(): Promise<void> }

/**
 * A keep-alive HTTP/1.1 app that answers the first request on each connection and
 * resets the connection (RST) as soon as it has read the second: the race of an app
 * closing a kept-alive connection just as the proxy reuses it, with the request read.
 */
async function resettingApp (): Promise<ResettingApp> {
  const received: string[] = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
    let buffered = ''
    let served = 0
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1')
      for (let end = buffered.indexOf('\r\n\r\n'); end !== -1; end = buffered.indexOf('\r\n\r\n')) {
        const head = buffered.slice(0, end)
        buffered = buffered.slice(end + 4)
        received.push(head.split(' ')[1]!)
        served++
        if (served >= 2) { socket.resetAndDestroy(); return }
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\nok')
      }
    })
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy()
      server.close(() => resolve())
    })
  }
}

test('a reset after the app read the request is not retried: 503 with Envoy\'s body, the app sees each request once', async (t) => {
  const app = await resettingApp()
  const envoy = await startEnvoy({ upstream: app.url })
  t.after(async () => { await envoy.close(); await app.close() })
  const answers = []
  for (const path of ['/r1', '/r2', '/r3']) answers.push(await raw(envoy.url + path))
  const copies = new Map<string, number>()
  for (const path of app.received) copies.set(path, (copies.get(path) ?? 0) + 1)
  assert.deepEqual([...copies], [['/r1', 1], ['/r2', 1], ['/r3', 1]], `the app received ${app.received.join(', ')}`)
  assert.deepEqual(answers.map((a) => a.status), [200, 503, 200])
  const reset = answers[1]!
  assert.equal(reset.body, 'upstream connect error or disconnect/reset before headers. reset reason: connection termination')
  assert.equal(reset.headers['content-type'], 'text/plain')
  assert.equal(reset.headers.server, 'envoy')
  const log = envoy.accessLog.find((e) => e.path === '/r2')
  assert.deepEqual([log?.status, log?.responseFlags, log?.details, log?.attempts], [503, 'UC', 'upstream_reset_before_response_started{connection_termination}', 1])
})

test('connect failures are retried (nothing was sent), then answered with the retried body', async (t) => {
  const app = await resettingApp()
  const upstream = app.url
  await app.close()
  for (const retryOn of ['reset-before-request', 'connect-failure'] as const) {
    const envoy = await startEnvoy({ upstream, retryOn })
    t.after(() => envoy.close())
    const down = await raw(envoy.url + '/x')
    assert.equal(down.status, 503)
    assert.equal(down.body, 'upstream connect error or disconnect/reset before headers. retried and the latest reset reason: remote connection failure')
    const log = envoy.accessLog.at(-1)
    assert.deepEqual([log?.responseFlags, log?.attempts], ['UF,URX', 3], `${retryOn}: one try and 2 retries`)
    assert.equal(log?.details, 'upstream_reset_before_response_started{remote_connection_failure|delayed_connect_error:_111}')
  }
})

test('without a retry policy (retryOn \'none\') a connect failure is answered at once', async (t) => {
  const app = await resettingApp()
  await app.close()
  const envoy = await startEnvoy({ upstream: app.url, retryOn: 'none' })
  t.after(() => envoy.close())
  const down = await raw(envoy.url + '/x')
  assert.equal(down.body, 'upstream connect error or disconnect/reset before headers. reset reason: remote connection failure')
  assert.deepEqual([envoy.accessLog.at(-1)?.responseFlags, envoy.accessLog.at(-1)?.attempts], ['UF', 1])
})

test('connect-failure alone does not retry a reset after the request went out', async (t) => {
  const app = await resettingApp()
  const envoy = await startEnvoy({ upstream: app.url, retryOn: 'connect-failure' })
  t.after(async () => { await envoy.close(); await app.close() })
  await raw(envoy.url + '/a')
  const reset = await raw(envoy.url + '/b')
  assert.equal(reset.status, 503)
  assert.deepEqual(app.received, ['/a', '/b'])
})

test('retry options are validated', async () => {
  await assert.rejects(startEnvoy({ upstream: 'http://127.0.0.1:1', retryOn: 'reset' as 'none' }), (e: unknown) => e instanceof InvalidOptionError && e.option === 'retryOn')
  await assert.rejects(startEnvoy({ upstream: 'http://127.0.0.1:1', upstreamRetries: -1 }), (e: unknown) => e instanceof InvalidOptionError && e.option === 'upstreamRetries')
})
