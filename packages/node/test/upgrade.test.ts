// Upgraded connections (WebSocket): an upgrade emits no 'request', so to a sweep
// that counts requests it looks idle. The engine counts it apart, never sweeps it,
// and tells the app with 'goingAway' when to close it (1001 Going Away).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { WebSocket, WebSocketServer } from 'ws'
import { startServer, stop, until } from './helpers.ts'
import { tlsMaterial, type Transport } from './transports.ts'

for (const transport of ['http', 'https'] as Transport[]) {
  test(`${transport}: a WebSocket stays open through the window, is counted, and is closed 1001 on 'goingAway'`, async (t) => {
    const s = await startServer({ windows: { clientFetchMs: 1_200 } }, transport)
    const wss = new WebSocketServer({ server: s.server as never })
    wss.on('connection', (ws) => { ws.on('message', (m) => ws.send(`echo ${String(m)}`)) })
    // The recipe from the README.
    const goingAway: string[] = []
    s.lameduck.on('goingAway', ({ cause }) => {
      goingAway.push(cause)
      for (const ws of wss.clients) ws.close(1001, 'going away')
    })
    t.after(async () => { wss.close(); await stop(s) })
    await until(() => s.lameduck.state === 'serving', 'serving')

    const ws = new WebSocket(s.url.replace(/^http/, 'ws'), { ca: tlsMaterial().cert })
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
    const closed = new Promise<{ code: number, at: number, state: string }>((resolve) => ws.once('close', (code) => resolve({ code, at: Date.now(), state: s.lameduck.state })))
    const echoes: string[] = []
    ws.on('message', (m) => echoes.push(String(m)))

    const offline = s.lameduck.offline()
    await until(() => s.lameduck.state === 'draining', 'draining')
    assert.equal((s.lameduck.status() as { connections: { upgraded: number } }).connections.upgraded, 1)
    const metrics = await (await request(`${s.admin}/metrics`)).body.text()
    assert.match(metrics, /^lameduck_upgraded_connections 1$/m)
    // Through the window (and its idle sweeps, 500 ms apart) the connection keeps working.
    let i = 0
    const windowEndsAt = s.lameduck.lifecycle.drain!.windowEndsAt
    while (Date.now() < windowEndsAt - 300) {
      ws.send(String(i))
      await until(() => echoes.includes(`echo ${i}`), `echo ${i}`)
      i++
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    assert.ok(i >= 3, `${i} round trips during the window`)
    const { code, state } = await closed
    assert.equal(code, 1001, 'closed cleanly with Going Away, not cut (1006)')
    assert.deepEqual(goingAway, ['window'])
    assert.notEqual(state, 'serving')
    const report = await offline
    assert.equal(report.outcome, 'offline')
    assert.ok(report.windowEndedAt !== null && report.windowEndedAt - report.startedAt >= 1_200, 'only after the window')
    await until(() => (s.lameduck.status() as { connections: { upgraded: number } }).connections.upgraded === 0, 'uncounted once closed')
  })
}

test('goingAway fires again at close; an upgraded connection left open then is destroyed so the close does not hang', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 100 } })
  const wss = new WebSocketServer({ server: s.server as never })
  const causes: string[] = []
  s.lameduck.on('goingAway', ({ cause }) => causes.push(cause)) // ignores it: never closes the socket
  t.after(() => wss.close())
  await until(() => s.lameduck.state === 'serving', 'serving')
  const ws = new WebSocket(s.url.replace(/^http/, 'ws'))
  await new Promise((resolve) => ws.once('open', resolve))
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)))
  await s.lameduck.shutdown('test')
  assert.deepEqual(causes, ['window', 'closing'])
  assert.equal(await closed, 1006, 'destroyed at the end, after the window and the closing grace')
  assert.equal(s.server.listening, false)
  await s.lameduck.close()
})
