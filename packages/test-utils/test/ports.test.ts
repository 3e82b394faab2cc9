import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect, createServer } from 'node:net'
import { once } from 'node:events'
import { close, deadPort, gate, listen } from '../src/index.ts'
import { ephemeralRange } from '../src/dead-port.ts'

const connectError = async (port: number): Promise<string> => {
  const s = connect(port, '127.0.0.1')
  const [err] = await once(s, 'error') as [NodeJS.ErrnoException]
  return err.code ?? String(err)
}

test('deadPort refuses connections, and listen(0) never hands its port out', async (t) => {
  const dead = await deadPort()
  t.after(() => dead.close())
  assert.equal(await connectError(dead.port), 'ECONNREFUSED')
  const servers = await Promise.all(Array.from({ length: 200 }, async () => { const s = createServer(); return { s, port: await listen(s) } }))
  assert.ok(servers.every((x) => x.port !== dead.port))
  for (const { s } of servers) await close(s)
})

test('deadPort lies below the ephemeral range, so no connect is ever given it as its source port (no TCP self-connect)', async (t) => {
  const [low] = ephemeralRange()
  const ports = await Promise.all(Array.from({ length: 20 }, () => deadPort()))
  t.after(() => Promise.all(ports.map((d) => d.close())))
  for (const d of ports) {
    assert.ok(d.port < low && d.port >= 10_000, `${d.port} is below the ephemeral range (from ${low})`)
    assert.equal(await connectError(d.port), 'ECONNREFUSED')
  }
  assert.equal(new Set(ports.map((d) => d.port)).size, ports.length, 'each its own port')
})

test('gate resets connections until opened, then forwards to the target on the same port', async (t) => {
  const g = await gate()
  const target = createServer((s) => s.end('hello'))
  const targetPort = await listen(target)
  t.after(async () => { await g.close(); await close(target) })
  assert.equal(await connectError(g.port), 'ECONNRESET')
  assert.equal(g.refused, 1)
  g.open(targetPort)
  const s = connect(g.port, '127.0.0.1')
  let text = ''
  s.setEncoding('utf8').on('data', (d: string) => { text += d })
  await once(s, 'end')
  assert.equal(text, 'hello')
  assert.equal(g.refused, 1)
})
