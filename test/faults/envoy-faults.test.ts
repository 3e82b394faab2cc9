// An Envoy admin API that refuses, hangs, answers 5xx or speaks the wrong stats
// format when the offline sequence drains the sidecar (a fake admin server).
// Each case: the drain step is reported and bounded by sidecar.drainTimeoutMs,
// never cut short by a bad reading, the app serves every request throughout, and
// the instance ends offline.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { IncomingMessage } from 'node:http'
import { request } from 'undici'
import { faultProxy, loggedProvider, steadyLoad, waitState, type Fault, type FaultProxy } from './helpers.ts'

const WINDOW_MS = 300
const DRAIN_TIMEOUT_MS = 1_000
const ADMIN_TIMEOUT_MS = 400

interface Report { outcome: string, sidecarMs: number, windowMs: number, problems: Array<{ step: string, message: string }> }

/** Istio's stats query answered with `n` active connections on the inbound listener. */
const istioStats = (n: number): Fault => ({ status: 200, body: `listener.0.0.0.0_15006.downstream_cx_active: ${n}\nlistener.0.0.0.0_15021.downstream_cx_active: 1\n` })

/** Quick retries of the drain call; `defaults` keeps Contour's (4 tries, 200 ms ×5 backoff). */
const QUICK_RETRIES = { drainAttempts: 3, drainBackoff: { initialMs: 50, factor: 2, maxMs: 200, jitter: 0 } }

async function drainWith (t: import('node:test').TestContext, onDrain: (req: IncomingMessage, admin: FaultProxy) => Fault, options: { closeAdmin?: boolean, retries?: 'quick' | 'defaults', drainTimeoutMs?: number } = {}) {
  const admin = await faultProxy(null)
  t.after(() => admin.close())
  let draining = false
  admin.fault = (req) => {
    if (req.url === '/ready') return { status: 200, body: 'LIVE\n' }
    if (!draining) return { status: 404 }
    return onDrain(req, admin)
  }
  const a = await loggedProvider('a', {
    windows: { clientFetchMs: WINDOW_MS },
    sidecar: {
      envoyAdmin: admin.url,
      readyTimeoutMs: 2_000,
      drainTimeoutMs: options.drainTimeoutMs ?? DRAIN_TIMEOUT_MS,
      checkIntervalMs: 50,
      timeoutMs: ADMIN_TIMEOUT_MS,
      ...(options.retries === 'defaults' ? {} : QUICK_RETRIES)
    }
  })
  t.after(() => a.app.close())
  await waitState(a.app, 'serving')
  const load = steadyLoad(async () => {
    const res = await request(`${a.url}/work`)
    await res.body.dump()
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
    return null
  }, 10)
  t.after(() => load.stop())
  draining = true
  if (options.closeAdmin === true) await admin.close()
  const started = Date.now()
  const res = await request(`${a.admin}/offline?wait=true`, { method: 'POST' })
  const took = Date.now() - started
  const body = await res.body.json() as { state: string, report: Report }
  await load.stop()
  assert.equal(body.state, 'offline')
  assert.equal(body.report.outcome, 'offline')
  assert.equal(load.stats.failed, 0, load.stats.errors.slice(0, 3).join(', '))
  assert.ok(took >= WINDOW_MS, 'the window came first')
  // The drain step ends (the offline report came back) and leaves nothing behind: no admin call after it.
  const endedAt = Date.now()
  assert.ok(admin.seen.every((s) => s.at <= endedAt), 'no admin call after the drain step ended')
  return { report: body.report, took, a, admin }
}

const drainCall = (req: IncomingMessage): boolean => req.method === 'POST' && (req.url ?? '').startsWith('/drain_listeners')
const envoyProblems = (r: Report): string[] => r.problems.filter((p) => p.step === 'envoy drain').map((p) => p.message)

test('baseline: connections drain 2 → 0, the step ends early with no problem', async (t) => {
  let polls = 0
  // A bound a starved machine's three polls cannot reach: the step must end because it drained.
  const { report, admin } = await drainWith(t, (req) => drainCall(req) ? { status: 200, body: 'OK\n' } : istioStats(Math.max(0, 2 - polls++)), { drainTimeoutMs: 30_000 })
  // No problem means no timeout: the step ended once drained, not at drainTimeoutMs.
  assert.deepEqual(report.problems, [])
  assert.match(admin.seen.find((s) => s.method === 'POST')!.url, /^\/drain_listeners\?inboundonly&graceful$/)
})

test('admin refused (Envoy gone): reported as unreachable, nothing to wait for', async (t) => {
  const { report } = await drainWith(t, () => 'refuse', { closeAdmin: true })
  const problems = envoyProblems(report)
  assert.equal(problems.length, 1)
  assert.match(problems[0]!, /Envoy admin unreachable: .*ECONNREFUSED/)
})

test('admin connection reset on every call: retried drainAttempts times, reported once', async (t) => {
  const { report, admin } = await drainWith(t, () => 'refuse')
  assert.equal(admin.seen.filter((s) => s.method === 'POST').length, 3, 'drainAttempts tries')
  assert.equal(envoyProblems(report).length, 1)
})

test('admin slow (hangs past its timeout on every call), default retries: still bounded by drainTimeoutMs, reported as a timeout', async (t) => {
  const { report } = await drainWith(t, () => 'hang', { retries: 'defaults' })
  const problems = envoyProblems(report)
  assert.ok(problems.length >= 1)
  assert.match(problems.join('\n'), /did not answer within 400 ms|within sidecar\.drainTimeoutMs/)
})

test('admin 5xx on the drain call: retried, reported with the status', async (t) => {
  const { report, admin } = await drainWith(t, () => ({ status: 503, body: 'no healthy upstream' }))
  assert.equal(admin.seen.filter((s) => s.method === 'POST').length, 3)
  assert.match(envoyProblems(report).join('\n'), /Envoy admin answered 503: no healthy upstream/)
})

test('admin 5xx on the drain call, default retries (4 tries, 200 ms ×5 backoff): the retries stop at drainTimeoutMs', async (t) => {
  const { report, admin } = await drainWith(t, () => ({ status: 503, body: 'no healthy upstream' }), { retries: 'defaults' })
  assert.ok(admin.seen.filter((s) => s.method === 'POST').length < 4, 'no try whose backoff would end past the deadline')
  assert.match(envoyProblems(report).join('\n'), /Envoy admin answered 503: no healthy upstream/)
})

test('stats 5xx after a good drain call: polled until drainTimeoutMs, one problem for the kind of failure', async (t) => {
  const { report } = await drainWith(t, (req) => drainCall(req) ? { status: 200, body: 'OK\n' } : { status: 500, body: 'stats broken' })
  const problems = envoyProblems(report)
  assert.ok(report.sidecarMs >= DRAIN_TIMEOUT_MS - 100, `kept polling to the bound (${report.sidecarMs} ms)`)
  assert.equal(problems.filter((p) => /answered 500/.test(p)).length, 1, 'repeated failures are reported once')
  assert.ok(problems.some((p) => /did not drain .* within sidecar\.drainTimeoutMs \(1000 ms\): no successful reading/.test(p)))
})

for (const [name, body] of [
  ['HTML', '<html><body>admin</body></html>'],
  ['Prometheus text instead of /stats text', '# TYPE envoy_listener_downstream_cx_active gauge\nenvoy_listener_downstream_cx_active{envoy_listener_address="0.0.0.0_15006"} 0\n'],
  ['JSON instead of text', '{"stats":[{"name":"listener.0.0.0.0_15006.downstream_cx_active","value":0}]}'],
  ['stats without the listener gauge', 'cluster.x.upstream_cx_active: 0\nserver.state: 0\n'],
  ['an empty body', '']
] as const) {
  test(`wrong stats format (${name}): never read as "0 connections", polled until drainTimeoutMs and reported`, async (t) => {
    const { report } = await drainWith(t, (req) => drainCall(req) ? { status: 200, body: 'OK\n' } : { status: 200, body })
    assert.ok(report.sidecarMs >= DRAIN_TIMEOUT_MS - 100, `not ended early by an unreadable answer (${report.sidecarMs} ms)`)
    const problems = envoyProblems(report)
    assert.ok(problems.some((p) => /active connections unavailable/.test(p)), problems.join('\n'))
    assert.ok(problems.some((p) => /did not drain .* no successful reading/.test(p)))
  })
}

test('connections that never drain: the step ends at drainTimeoutMs and says how many were left', async (t) => {
  const { report } = await drainWith(t, (req) => drainCall(req) ? { status: 200, body: 'OK\n' } : istioStats(7))
  assert.ok(report.sidecarMs >= DRAIN_TIMEOUT_MS - 100)
  assert.match(envoyProblems(report).join('\n'), /did not drain to ≤ 0 within sidecar\.drainTimeoutMs \(1000 ms\): 7 still open/)
})
