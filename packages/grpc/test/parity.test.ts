// What attachGrpc() shares with attach() through the engine: the signal path (SIGTERM in a real
// child process: drain, the call in flight completes, exit 0, the termination message), the
// admin listener's /status and /metrics with the gRPC server's connections and calls, and
// sidecar steps after the window. Negative control: the same SIGTERM to the app that handles it
// by hand (forceShutdown) loses the call.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as grpc from '@grpc/grpc-js'
import { check, Echo, healthClient, runCall, SERVING, spawnSignalApp, startGrpc, until } from './helpers.ts'

for (const mode of ['lameduck', 'naive'] as const) {
  test(`SIGTERM to a child gRPC server${mode === 'naive' ? ' (negative control: forceShutdown by hand)' : ''}: the call in flight ${mode === 'naive' ? 'is lost' : 'completes, exit 0, the termination message says so'}`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'lameduck-grpc-term-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    const termination = join(dir, 'termination-log')
    const app = spawnSignalApp(mode === 'naive' ? ['naive'] : ['lameduck', termination])
    t.after(() => app.kill())
    await until(() => app.lines.some((l) => l.event === 'listening'), 'the child to bind', 30_000)
    if (mode === 'lameduck') await until(() => app.lines.some((l) => l.event === 'state' && l.to === 'serving'), 'serving', 30_000)
    const port = app.lines.find((l) => l.event === 'listening')!.port as number
    const client = new Echo(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>
    t.after(() => client.close())
    // A first call: the connection is up before the slow one.
    assert.equal((await runCall(client, 'unary', { ms: 0 })).code, grpc.status.OK)
    let echoed = 0
    const call = runCall(client, 'bidi', { ms: 600, onData: () => { echoed++ } })
    await until(() => echoed > 0, 'the stream under way')
    app.kill()
    const result = await call
    if (mode === 'naive') {
      assert.notEqual(result.code, grpc.status.OK)
      return
    }
    assert.equal(result.code, grpc.status.OK, result.details)
    assert.equal(result.messages.length, 5)
    assert.equal(await app.exited, 0)
    const states = app.lines.filter((l) => l.event === 'state').map((l) => l.to)
    assert.deepEqual(states.slice(-4), ['draining', 'offline', 'closing', 'stopped'])
    assert.match(readFileSync(termination, 'utf8'), /^lameduck: offline \(SIGTERM\) .*nothing cut/)
  })
}

test('the admin listener serves /status and /metrics with the gRPC server\'s connections and calls', async (t) => {
  const s = await startGrpc()
  t.after(() => s.stop())
  await until(() => s.lameduck!.state === 'serving', 'serving')
  const client = s.client()
  const call = runCall(client, 'server streaming', { ms: 500 })
  await until(() => s.lameduck!.lifecycle.inflight.count === 1, 'the stream in flight')
  const status = await (await fetch(`${s.lameduck!.adminUrl}/status`)).json() as { state: string, inflight: number, connections: { open: number, upgraded: number } }
  assert.equal(status.state, 'serving')
  assert.equal(status.inflight, 1)
  assert.equal(status.connections.open, 1)
  assert.equal(status.connections.upgraded, 1, 'the open server stream')
  const metrics = await (await fetch(`${s.lameduck!.adminUrl}/metrics`)).text()
  assert.match(metrics, /^lameduck_inflight_requests 1$/m)
  assert.match(metrics, /^lameduck_open_connections 1$/m)
  assert.equal((await call).code, grpc.status.OK)
})

test('the window\'s end, then the sidecar steps, as on HTTP: goingAway comes first; behind a sidecar no GOAWAY at the window (the sidecar\'s drain moves the consumers)', async (t) => {
  const seen: Array<{ what: string, at: number }> = []
  const s = await startGrpc({ lameduck: { sidecar: { afterWindow: [{ name: 'envoy drain', run: async () => { seen.push({ what: 'sidecar', at: Date.now() }) } }] } } })
  t.after(() => s.stop())
  s.lameduck!.on('goingAway', (e) => { seen.push({ what: `goingAway:${e.cause}`, at: Date.now() }) })
  await until(() => s.lameduck!.state === 'serving', 'serving')
  const report = await s.lameduck!.offline()
  // The window watch re-checks on each drain phase: it ends as the drain leaves the window phase.
  assert.deepEqual(seen.map((e) => e.what), ['goingAway:window', 'sidecar'])
  for (const e of seen) assert.ok(e.at >= report.deregisteredAt! + report.windowMs, `${e.what} after the window`)
  assert.ok(s.log.lines.some((l) => l.msg.includes('behind a sidecar, its drain moves the consumers')))
  assert.ok(!s.log.lines.some((l) => /GOAWAY to \d+ gRPC connection/.test(l.msg)), 'the sidecar\'s streams are not refused at the window')
})

test('online() after a drain: the server never stopped listening; clients reconnect after the GOAWAY and call again, health says SERVING', async (t) => {
  const s = await startGrpc()
  t.after(() => s.stop())
  const lameduck = s.lameduck!
  await until(() => lameduck.state === 'serving', 'serving')
  const client = s.client()
  assert.equal((await runCall(client, 'unary', { ms: 0 })).code, grpc.status.OK)
  await lameduck.offline()
  await lameduck.online()
  assert.equal(lameduck.state, 'serving')
  assert.equal(s.registry.registered('echo').length, 1)
  const again = await runCall(client, 'bidi', { ms: 50 })
  assert.equal(again.code, grpc.status.OK)
  assert.equal(again.headers?.get('x-lameduck-state').length, 0, 'no state mark while serving')
  const health = healthClient(s)
  t.after(() => health.close())
  assert.equal((await check(health)).status, SERVING)
})
