// `lameduck wait-drained` against a small fake of the app's lameduck admin listener
// (GET /status -> {"state": ...}), so it does not depend on the plugin.
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { PassThrough } from 'node:stream'
import { test } from 'node:test'
import { until } from '@lameduck/test-utils'
import { UsageError } from '../src/args.ts'
import { EXIT } from '../src/command.ts'
import { waitDrained } from '../src/commands/wait-drained.ts'

interface Ctx { after(fn: () => unknown): void }

async function run (argv: string[], options: { env?: NodeJS.ProcessEnv, signal?: AbortSignal } = {}): Promise<{ code: number, out: string, err: string }> {
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  let out = ''
  let err = ''
  stdout.on('data', (c: Buffer) => { out += c })
  stderr.on('data', (c: Buffer) => { err += c })
  const code = await waitDrained.run({ argv, stdout, stderr, env: options.env ?? {}, signal: options.signal ?? new AbortController().signal })
  return { code, out, err }
}

interface FakeAdmin {
  url: string
  state: string
  /** Answer this status instead of the state, while set. */
  fail: number | null
  token: string | null
  polls: number
  close(): Promise<void>
}

async function fakeStatus (t: Ctx, state: string): Promise<FakeAdmin> {
  const fake = { state, fail: null as number | null, token: null as string | null, polls: 0 } as FakeAdmin
  const server: Server = createServer((req, res) => {
    if (req.url !== '/status') { res.statusCode = 404; res.end('{"error":"not found"}'); return }
    fake.polls++
    if (fake.token !== null && req.headers.authorization !== `Bearer ${fake.token}`) { res.statusCode = 401; res.end(); return }
    if (fake.fail !== null) { res.statusCode = fake.fail; res.end('oops'); return }
    res.setHeader('content-type', 'application/json; charset=utf-8')
    res.end(JSON.stringify({ state: fake.state, warming: false, inflight: 0 }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  let closed = false
  fake.close = async () => {
    if (closed) return
    closed = true
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
  t.after(() => fake.close())
  return fake
}

async function waitFor (what: string, check: () => boolean): Promise<void> {
  await until(check, what, { intervalMs: 5 })
}

test('blocks while the app drains, exits 0 once it is offline', async (t) => {
  const app = await fakeStatus(t, 'draining')
  let done = false
  const running = run(['--admin', app.url, '--interval', '0.02']).finally(() => { done = true })
  await waitFor('a few polls', () => app.polls >= 3)
  assert.equal(done, false)
  app.state = 'offline'
  const r = await running
  assert.equal(r.code, EXIT.OK)
  assert.match(r.out, /^lameduck wait-drained: the app is draining, waiting for offline or stopped\nlameduck wait-drained: the app is offline after [\d.]+ s; the sidecar may stop\n$/)
})

test('a state with terminal escape sequences is printed escaped, never as raw control characters', async (t) => {
  const app = await fakeStatus(t, '\u001b[2J\u001b]0;pwned\u0007draining')
  const running = run(['--admin', app.url, '--interval', '0.02'])
  await waitFor('a poll', () => app.polls >= 2)
  app.state = 'offline'
  const r = await running
  assert.equal(r.code, EXIT.OK)
  assert.ok(![...r.out].some((c) => c !== '\n' && (c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)), 'no control character reaches the terminal')
  assert.match(r.out, /the app is \\u001b\[2J/)
})

test('stopped counts as done; closing does not', async (t) => {
  const app = await fakeStatus(t, 'closing')
  const running = run(['--admin', app.url, '--interval', '0.02'])
  await waitFor('a few polls', () => app.polls >= 3)
  app.state = 'stopped'
  const r = await running
  assert.equal(r.code, EXIT.OK)
  assert.match(r.out, /the app is closing, waiting[^]*the app is stopped after/)
})

test('the app going away (connection refused) ends the wait with 0', async (t) => {
  const app = await fakeStatus(t, 'draining')
  const running = run(['--admin', app.url, '--interval', '0.02'])
  await waitFor('a poll', () => app.polls >= 1)
  await app.close()
  const r = await running
  assert.equal(r.code, EXIT.OK)
  assert.match(r.out, /the app's admin listener is gone \(connection refused\) after [\d.]+ s; the sidecar may stop\n$/)
  // Nothing there from the start: nothing to wait for either.
  const again = await run(['--admin', app.url])
  assert.equal(again.code, EXIT.OK)
})

test('a token: 4 without it, accepted with --token or $LAMEDUCK_TOKEN', async (t) => {
  const app = await fakeStatus(t, 'offline')
  app.token = 's3cret'
  const denied = await run(['--admin', app.url])
  assert.equal(denied.code, EXIT.UNAUTHORIZED)
  assert.match(denied.err, /\/status answered 401: pass the admin token with --token or \$LAMEDUCK_TOKEN\n$/)
  assert.equal((await run(['--admin', app.url, '--token', 's3cret'])).code, EXIT.OK)
  assert.equal((await run([], { env: { LAMEDUCK_ADMIN: app.url, LAMEDUCK_TOKEN: 's3cret' } })).code, EXIT.OK)
})

test('errors in between are retried; a listener that is not lameduck\'s fails at once', async (t) => {
  const app = await fakeStatus(t, 'draining')
  app.fail = 503
  const running = run(['--admin', app.url, '--interval', '0.02'])
  await waitFor('a few failing polls', () => app.polls >= 3)
  app.fail = null
  app.state = 'offline'
  const r = await running
  assert.equal(r.code, EXIT.OK)
  assert.match(r.err, /\/status answered 503, retrying\n/)

  const wrong = await run(['--admin', `${app.url}/elsewhere`])
  assert.equal(wrong.code, EXIT.FAILED)
  assert.match(wrong.err, /\/elsewhere\/status answered 404 without a lameduck state: is --admin the app's lameduck admin listener\?\n$/)
})

test('--timeout: exit 1 with the last state; a signal: exit 1', async (t) => {
  const app = await fakeStatus(t, 'draining')
  const started = Date.now()
  const r = await run(['--admin', app.url, '--interval', '0.05', '--timeout', '0.2'])
  assert.equal(r.code, EXIT.FAILED)
  assert.ok(Date.now() - started >= 200)
  assert.match(r.err, /the app was not offline after 0\.2 s \(last: the app is draining, waiting for offline or stopped\); letting the sidecar stop anyway\n$/)

  const ac = new AbortController()
  const running = run(['--admin', app.url, '--interval', '0.02'], { signal: ac.signal })
  await waitFor('polling', () => app.polls >= 6)
  ac.abort(new Error('received SIGTERM'))
  const interrupted = await running
  assert.equal(interrupted.code, EXIT.FAILED)
  assert.match(interrupted.err, /interrupted while the app was still running/)
})

test('bad flags are usage errors; --help has an example', async () => {
  await assert.rejects(run(['--interval', '0']), (e: unknown) => e instanceof UsageError && /--interval must be more than 0 seconds/.test(e.message))
  await assert.rejects(run(['--timeout', 'soon']), (e: unknown) => e instanceof UsageError && /--timeout must be a number of seconds/.test(e.message))
  await assert.rejects(run(['--admin', 'ftp://x']), UsageError)
  await assert.rejects(run(['extra']), UsageError)
  assert.match(waitDrained.help, /^Usage: lameduck wait-drained /)
  assert.match(waitDrained.help, /Example \(the Envoy container of the pod\):\n {2}lifecycle:\n {4}preStop:/)
  assert.equal(waitDrained.name, 'wait-drained')
})
