// HTTP/1.1 pipelining while draining: every request that was read gets its
// response, and only the last one read carries `connection: close` (a close on an
// earlier one would make Node drop the responses queued behind it).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connect as tcp, type Socket } from 'node:net'
import { connect as tls } from 'node:tls'
import { startServer, stop, until } from './helpers.ts'
import { tlsMaterial } from './transports.ts'

function pipelined (paths: string[]): string {
  return paths.map((p) => `POST ${p} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\r\nhello`).join('')
}

/** Writes the requests in one write and reads until the server closes the connection. */
async function exchange (socket: Socket, payload: string): Promise<string> {
  let text = ''
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => { text += chunk })
  socket.write(payload)
  await new Promise<void>((resolve, reject) => { socket.once('close', () => resolve()); socket.once('error', reject) })
  return text
}

function responses (text: string): string[] {
  return text.split(/(?=HTTP\/1\.1 )/).filter((r) => r.startsWith('HTTP/1.1 '))
}

for (const [transport, path] of [['http', '/hello'], ['http', '/slow?ms=20'], ['https', '/hello']] as const) {
  test(`${transport}: 5 pipelined POSTs ${path === '/hello' ? '(answered synchronously)' : '(answered later)'} while draining get 5 responses, connection: close on the last only`, async (t) => {
    const s = await startServer({ windows: { clientFetchMs: 1_000 } }, transport)
    t.after(() => stop(s))
    await until(() => s.lameduck.state === 'serving', 'serving')
    s.lameduck.offline().catch(() => {})
    await until(() => s.lameduck.state === 'draining', 'draining')
    const { port } = new URL(s.url)
    const socket = transport === 'https'
      ? tls({ host: '127.0.0.1', port: Number(port), ca: tlsMaterial().cert })
      : tcp({ host: '127.0.0.1', port: Number(port) })
    await new Promise((resolve) => socket.once(transport === 'https' ? 'secureConnect' : 'connect', resolve))
    const text = await exchange(socket, pipelined(Array.from({ length: 5 }, () => path)))
    const all = responses(text)
    assert.equal(all.length, 5, text)
    for (const r of all) assert.match(r, /^HTTP\/1\.1 200 /)
    for (const r of all) assert.match(r, /^x-lameduck-state: draining\r$/im)
    assert.deepEqual(all.map((r) => /^connection: close\r$/im.test(r)), [false, false, false, false, true])
    assert.equal(s.seen.length, 5, 'five handlers ran')
  })
}
