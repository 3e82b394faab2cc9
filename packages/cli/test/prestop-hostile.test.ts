// What prestop does with answers it cannot trust: whatever answers at --admin (an
// older app, a proxy, a wrong port) may send malformed reports, text with terminal
// escape sequences, or a body without end. Stand-in admin listeners send exactly that.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { prestop } from '../src/commands/prestop.ts'
import { EXIT } from '../src/command.ts'
import { MAX_ANSWER_BYTES } from '../src/http.ts'
import { runCommand } from './helpers.ts'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

async function admin (t: { after: (fn: () => void) => void }, handler: Handler): Promise<string> {
  const server: Server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => { server.closeAllConnections(); server.close() })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const json = (res: ServerResponse, body: unknown, status = 200): void => {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

const report = (extra: Record<string, unknown>): Record<string, unknown> => ({
  outcome: 'offline', reason: 'admin /offline', startedAt: Date.now(), endedAt: Date.now() + 60_000, totalMs: 1200, windowMs: 1000, sidecarMs: 0, inflightWaitMs: 200, requestsWhileDraining: 3, problems: [], ...extra
})

const ESC = '\u001b'
/** Control characters that must never reach the terminal from app text: ESC, CSI (C1), CR, BS, BEL, bidi override. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u001b\u009b\r\u0008\u0007\u202e]/

test('malformed report fields are shown or skipped, never an "unexpected error"', async (t) => {
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['problems: [null]', { problems: [null] }, /^lameduck prestop: problem: drain: \(unreadable entry: null\)$/m],
    ['problems of every type', { problems: [42, 'plain text', { step: 7, message: { nested: true } }, ['x']] }, /problem: drain: \(unreadable entry: 42\)\n.*problem: drain: plain text\n.*problem: drain: \n.*problem: drain: \(unreadable entry: \["x"\]\)/],
    ['problems not an array', { problems: { step: 'deregister' } }, /offline after 1\.2 s/],
    ['endedAt past what a Date holds', { endedAt: 1e300, totalMs: 'soon', deregistration: 'unconfirmed' }, /offline after 0 s/],
    ['a report that is not an object', { outcome: null, problems: null, deregistration: { state: 'unconfirmed', attempts: 'many' } }, /never confirmed the deregistration \(0 attempts\)/]
  ]
  for (const [name, extra, expected] of cases) {
    const url = await admin(t, (req, res) => json(res, req.url?.startsWith('/offline') ? { state: 'offline', report: report(extra), connections: { closedWhileDraining: 'x' } } : { state: 'serving' }))
    const run = await runCommand(prestop, ['--admin', url])
    assert.notEqual(run.code, EXIT.FAILED, `${name}: ${run.stderr}`)
    assert.match(run.stdout + run.stderr, expected, name)
  }
  // A hundred problems: twenty are listed, the rest counted.
  const url = await admin(t, (req, res) => json(res, req.url?.startsWith('/offline') ? { state: 'offline', report: report({ problems: Array.from({ length: 100 }, (_, i) => ({ step: 'x', message: `p${i}` })) }) } : { state: 'serving' }))
  const many = await runCommand(prestop, ['--admin', url])
  assert.equal(many.code, EXIT.OK, many.stderr)
  assert.equal(many.stdout.split('\n').filter((l) => l.includes('problem: x: p')).length, 20)
  assert.match(many.stdout, /and 80 more problems: see http:\/\/127\.0\.0\.1:\d+\/status/)
})

test('app and registry text is printed with its control characters escaped (progress, problems, errors)', async (t) => {
  const hostile = `${ESC}[2J${ESC}[31mred\rover\u0008\u0007\u009b31m\u202eevil`
  let polled: () => void = () => {}
  let statusSeen = new Promise<void>((resolve) => { polled = resolve })
  let polls = 0
  const url = await admin(t, (req, res) => {
    if (req.url?.startsWith('/status')) {
      json(res, { state: `draining${hostile}`, inflight: 1, drain: { phase: `window${hostile}`, requestsWhileDraining: 0 } })
      // The first /status is prestop's "already offline?" check; the second is a progress poll.
      if (++polls === 2) polled()
      return
    }
    // The drain answer waits until a progress poll was answered, so its line is printed too.
    statusSeen.then(() => json(res, {
      state: 'offline',
      report: report({ reason: hostile, problems: [{ step: `deregister${hostile}`, message: `registry said ${hostile}` }], deregistration: { state: 'unconfirmed', attempts: 2, lastError: `refused ${hostile}` } })
    }), () => {})
  })
  const run = await runCommand(prestop, ['--admin', url])
  assert.equal(run.code, EXIT.UNCONFIRMED, run.stderr)
  assert.doesNotMatch(run.stdout, CONTROL)
  assert.doesNotMatch(run.stderr, CONTROL)
  assert.match(run.stdout, /lameduck prestop: draining\\u001b\[2J\\u001b\[31mred\\u000dover\\u0008\\u0007\\u009b31m\\u202eevil/, 'the progress line')
  assert.match(run.stdout, /problem: deregister\\u001b\[2J.*: registry said \\u001b\[2J/)
  assert.match(run.stderr, /last error: refused \\u001b\[2J\\u001b\[31mred\\u000d/)

  // On a terminal the bar is drawn with the CLI's own \r and ESC[K, and nothing else.
  polls = 0
  statusSeen = new Promise<void>((resolve) => { polled = resolve })
  const tty = await runCommand(prestop, ['--admin', url], { tty: true })
  assert.equal(tty.code, EXIT.UNCONFIRMED)
  assert.match(tty.stdout, /\rlameduck prestop \[[█░]+\] draining\\u001b\[2J/, 'the bar shows the state, escaped')
  assert.doesNotMatch(tty.stdout.replaceAll(`\r${ESC}[K`, '').replaceAll(`${ESC}[K`, '').replaceAll('\r', ''), CONTROL)

  // A refusal's message and an unexpected status's body are app text too.
  for (const [status, body] of [[409, { state: 'starting', message: `not now ${hostile}` }], [500, `boom ${hostile}`]] as const) {
    const other = await admin(t, (req, res) => {
      if (typeof body === 'string') { res.writeHead(status, { 'content-type': 'text/plain' }); res.end(body) } else json(res, body, status)
    })
    const r = await runCommand(prestop, ['--admin', other])
    assert.equal(r.code, EXIT.FAILED)
    assert.doesNotMatch(r.stderr, CONTROL, String(status))
    assert.match(r.stderr, /\\u001b\[2J\\u001b\[31mred/, String(status))
  }
})

test(`an answer larger than ${MAX_ANSWER_BYTES / 2 ** 20} MiB is not read to its end: exit 1 saying so`, async (t) => {
  const chunk = Buffer.alloc(64 * 1024, 'x')
  const total = 64 * 2 ** 20
  let finished = false
  // Announced (content-length) and streamed without a length (chunked): both stop at the cap.
  for (const announced of [true, false]) {
    const url = await admin(t, (req, res) => {
      if (!req.url?.startsWith('/offline')) { json(res, { state: 'serving' }); return }
      res.writeHead(200, { 'content-type': 'application/json', ...(announced ? { 'content-length': String(total) } : {}) })
      let sent = 0
      const more = (): void => {
        while (sent < total) {
          sent += chunk.length
          if (!res.write(chunk)) { res.once('drain', more); return }
        }
        finished = true
        res.end()
      }
      more()
    })
    const run = await runCommand(prestop, ['--admin', url])
    assert.equal(run.code, EXIT.FAILED, run.stderr)
    assert.match(run.stderr, /^lameduck prestop: the answer from 127\.0\.0\.1:\d+\/offline is larger than 1 MiB, more than any lameduck answer; check that the URL points at the app's lameduck admin listener .*check http:\/\/127\.0\.0\.1:\d+\/status$/m, `announced: ${announced}`)
    assert.equal(finished, false, `announced: ${announced}: the CLI read the whole 64 MiB`)
  }
})
