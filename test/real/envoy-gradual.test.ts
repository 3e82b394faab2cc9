// Envoy's Gradual drain strategy (`--drain-strategy gradual`, Envoy's default; Istio runs
// `immediate`) on real Envoy 1.40.0: which responses an inbound drain tells to close, second by
// second, on real Envoy and the devkit stand-in (which must not drain sooner than real Envoy), and
// what the plugin's sidecar phase does with it: a pooled connection is only surely told after the
// drain time, so the phase waits for it (never less), ends on the idle rule, and nothing is lost.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEnvoy } from '@lameduck/devkit'
import { until } from '@lameduck/test-utils'
import { Client } from 'undici'
import { startRealEnvoy } from './helpers/envoy.ts'
import { consumer, runSidecarDrain, startApp, stat } from './helpers/envoy-drain.ts'

// 2 s: a first second with nothing told, a second with everything told (half the drain time is 1 s).
const DRAIN_TIME_S = 2

/** Each second of the drain: [responses told to close, responses], one fresh connection per request. */
async function closeShares (t: import('node:test').TestContext, target: 'real' | 'stand-in'): Promise<Array<[number, number]>> {
  const app = await startApp()
  t.after(() => app.server.listening ? app.close() : undefined)
  let inbound: string
  let drain: () => Promise<unknown>
  if (target === 'real') {
    const e = await startRealEnvoy({ upstream: app.url, drainTimeS: DRAIN_TIME_S, drainStrategy: 'gradual' })
    t.after(() => e.stop())
    const info = JSON.parse((await e.admin('GET', '/server_info')).body) as { command_line_options: { drain_strategy: string, drain_time: string } }
    assert.deepEqual([info.command_line_options.drain_strategy, info.command_line_options.drain_time], ['Gradual', `${DRAIN_TIME_S}s`])
    inbound = e.inboundUrl
    drain = () => e.admin('POST', '/drain_listeners?inboundonly&graceful')
  } else {
    const e = await startEnvoy({ upstream: app.url, drainTimeMs: DRAIN_TIME_S * 1000, drainStrategy: 'gradual' })
    t.after(() => e.close())
    inbound = e.url
    drain = () => fetch(`${e.adminUrl}/drain_listeners?inboundonly&graceful`, { method: 'POST' })
  }
  const before = Date.now()
  await drain()
  const after = Date.now()
  const seconds: Array<[number, number]> = Array.from({ length: DRAIN_TIME_S }, () => [0, 0])
  // Until just before the listener stops (new connections are refused after the drain time).
  while (Date.now() - after < DRAIN_TIME_S * 1000 - 150) {
    const c = new Client(inbound)
    const res = await c.request({ method: 'GET', path: '/x' })
    await res.body.text()
    await c.close()
    // The drain began between `before` and `after`; a response near a whole second counts nowhere.
    const lo = Date.now() - after
    const hi = Date.now() - before
    if (Math.floor(lo / 1000) === Math.floor(hi / 1000) && lo % 1000 > 50 && hi % 1000 < 950) {
      const s = seconds[Math.floor(lo / 1000)]!
      s[1]++
      if (res.headers.connection === 'close') s[0]++
    }
  }
  return seconds
}

test('gradual drain: no response told to close in the first whole second, every one from half the drain time — real Envoy and the stand-in alike', async (t) => {
  for (const target of ['real', 'stand-in'] as const) {
    const seconds = await closeShares(t, target)
    t.diagnostic(`${target}: told to close per second of a ${DRAIN_TIME_S} s drain: ${seconds.map(([c, n], i) => `${i}s ${c}/${n}`).join(', ')}`)
    assert.ok(seconds[0]![1] > 0, `${target}: responses in the first second`)
    assert.equal(seconds[0]![0], 0, `${target}: none told in the first second`)
    for (let s = DRAIN_TIME_S / 2; s < DRAIN_TIME_S; s++) {
      assert.ok(seconds[s]![1] > 0, `${target}: responses in second ${s}`)
      assert.equal(seconds[s]![0], seconds[s]![1], `${target}: every response told from half the drain time (second ${s})`)
    }
  }
})

test('gradual drain on real Envoy: the sidecar phase waits the drain time (a pooled connection may go untold until then), ends on the idle rule, nothing lost', async (t) => {
  const app = await startApp()
  t.after(() => app.server.listening ? app.close() : undefined)
  const envoy = await startRealEnvoy({ upstream: app.url, drainTimeS: DRAIN_TIME_S, drainStrategy: 'gradual' })
  t.after(() => envoy.stop())
  const c = await consumer(envoy)
  t.after(() => c.agent.close())
  const open = await stat(envoy, `listener.${envoy.inboundStatAddress}.downstream_cx_active`)
  assert.ok(open >= 1, 'the consumer pools its connections')
  const drainTimeoutMs = 20_000
  const { problems, startedAt, endedAt } = await runSidecarDrain(envoy, { drainTimeoutMs, idleQuietMs: 300 })
  t.diagnostic(`sidecar phase ${endedAt - startedAt} ms with --drain-strategy gradual --drain-time-s ${DRAIN_TIME_S} (idleQuietMs 300, drainTimeoutMs ${drainTimeoutMs})`)
  assert.deepEqual(problems, [], 'ended on the idle rule, not on drainTimeoutMs')
  assert.ok(endedAt - startedAt >= DRAIN_TIME_S * 1000, 'not before every next response closes its connection (the drain time)')
  // At the end of the phase a request on the pooled connections is served and told to close.
  const left = await stat(envoy, `listener.${envoy.inboundStatAddress}.downstream_cx_active`)
  assert.ok(left >= 1, `pooled connections still open (${left})`)
  await c.send('/straggler')
  await until(async () => await stat(envoy, `listener.${envoy.inboundStatAddress}.downstream_cx_active`) < left, 'the straggler\'s connection to be closed by Envoy')
  await app.close()
  await envoy.stop()
  assert.deepEqual(c.failed, [])
  assert.equal(c.ok, 41)
})
