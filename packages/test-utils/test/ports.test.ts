import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect, createServer } from 'node:net'
import { once } from 'node:events'
import { close, deadPort, gate, listen } from '../src/index.ts'

const connectError = async (port: number): Promise<string> => {
  const s = connect(port, '127.0.0.1')
  const [err] = await once(s, 'error') as [NodeJS.ErrnoException]
  return err.code ?? String(err)
}

test('deadPort refuses connections and nobody else can bind its port while it is open', async (t) => {
  const dead = await deadPort()
  t.after(() => dead.close())
  assert.equal(await connectError(dead.port), 'ECONNREFUSED')
  const other = createServer()
  other.listen(dead.port, '127.0.0.1')
  const [err] = await once(other, 'error') as [NodeJS.ErrnoException]
  assert.equal(err.code, 'EADDRINUSE', 'the port stays taken')
  // listen(0) never hands it out either (the kernel skips ports in use).
  const servers = await Promise.all(Array.from({ length: 200 }, async () => { const s = createServer(); return { s, port: await listen(s) } }))
  assert.ok(servers.every((x) => x.port !== dead.port))
  for (const { s } of servers) await close(s)
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
