import { test } from 'node:test'
import assert from 'node:assert/strict'
import { drainEnvoy, envoyAdmin, type DrainProgress } from '@lameduck/envoy'
import { fakeAdmin, type Reply } from './fake-admin.ts'

const STATS = (n: number): Reply => ({ body: `listener.0.0.0.0_8080.downstream_cx_active: ${n}\n` })
const noJitter = { initialMs: 1, factor: 2, maxMs: 4, jitter: 0 }

async function setup (t: { after: (fn: () => Promise<void>) => void }, answer: (path: string, n: number) => Reply) {
  const seen = new Map<string, number>()
  const server = await fakeAdmin((req) => {
    const path = (req.url ?? '').split('?')[0]!
    const n = (seen.get(path) ?? 0) + 1
    seen.set(path, n)
    return answer(path, n)
  })
  const admin = envoyAdmin({ url: server.url, timeoutMs: 2000 })
  t.after(async () => { await admin.close(); await server.close() })
  const events: DrainProgress[] = []
  return { server, admin, events, onProgress: (e: DrainProgress) => events.push(e) }
}

test('drainEnvoy both: health check failed, then listeners drained, retried through a 503, then polled to 0', async (t) => {
  const { server, admin, events, onProgress } = await setup(t, (path, n) => {
    if (path === '/drain_listeners' && n === 1) return { status: 503, body: 'busy' }
    if (path === '/stats') return STATS(n === 1 ? 2 : 0)
    return { body: 'OK' }
  })
  const result = await drainEnvoy(admin, { strategy: 'both', inboundOnly: true, backoff: noJitter, checkIntervalMs: 1, method: 'istio', onProgress })
  assert.equal(result.outcome, 'drained')
  assert.deepEqual(server.requests.filter((r) => r.method === 'POST').map((r) => r.url),
    ['/healthcheck/fail', '/drain_listeners?inboundonly&graceful', '/drain_listeners?inboundonly&graceful'])
  assert.deepEqual(events.map((e) => e.type), ['sent', 'attempt-failed', 'sent', 'waiting', 'poll', 'poll'])
  assert.equal((events[1] as { retryInMs?: number }).retryInMs, 1)
})

test('drainEnvoy: a 4xx is not retried and nothing is polled', async (t) => {
  const { server, admin } = await setup(t, () => ({ status: 404, body: 'no such route' }))
  const result = await drainEnvoy(admin, { strategy: 'healthcheck', backoff: noJitter, pollAfterFailedCall: true })
  assert.equal(result.outcome, 'not-sent')
  assert.deepEqual(server.requests.map((r) => r.url), ['/healthcheck/fail'])
})

test('drainEnvoy: after every attempt failed, polls only with pollAfterFailedCall (Contour carries on)', async (t) => {
  const { server, admin, events, onProgress } = await setup(t, (path) => path === '/stats' ? STATS(0) : { status: 500, body: 'broken' })
  const stop = await drainEnvoy(admin, { strategy: 'healthcheck', attempts: 3, backoff: noJitter, method: 'istio' })
  assert.equal(stop.outcome, 'not-sent')
  assert.equal(stop.outcome === 'not-sent' && stop.attempts, 3)
  assert.equal(server.requests.filter((r) => r.url.startsWith('/stats')).length, 0)

  const carryOn = await drainEnvoy(admin, { strategy: 'healthcheck', attempts: 2, backoff: noJitter, method: 'istio', pollAfterFailedCall: true, onProgress })
  assert.equal(carryOn.outcome, 'drained')
  assert.deepEqual(events.map((e) => e.type), ['attempt-failed', 'attempt-failed', 'call-failed', 'waiting', 'poll'])
})

test('drainEnvoy: no retry is made that would pass the deadline', async (t) => {
  const { server, admin, events, onProgress } = await setup(t, () => ({ status: 500, body: 'broken' }))
  const result = await drainEnvoy(admin, { strategy: 'healthcheck', attempts: 4, backoff: { initialMs: 60_000, maxMs: 60_000, jitter: 0 }, timeoutMs: 30_000, onProgress })
  assert.equal(result.outcome, 'not-sent')
  assert.equal(server.requests.length, 1)
  assert.equal((events[0] as { retryInMs?: number }).retryInMs, undefined)
})
