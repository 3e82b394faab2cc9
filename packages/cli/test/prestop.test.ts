import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { prestop } from '../src/commands/prestop.ts'
import { EXIT } from '../src/command.ts'
import { deadPort } from '@lameduck/test-utils'
import { runBin, runCommand, startApp, until } from './helpers.ts'

const ESC = String.fromCharCode(27)

test('prestop takes a serving app offline, waits for the drain, exits 0', async (t) => {
  const { app, admin } = await startApp()
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  const run = await runCommand(prestop, ['--admin', admin])
  assert.equal(run.code, EXIT.OK, run.stderr)
  assert.equal(app.lameduck.state, 'offline')
  assert.ok(run.ms >= 250, `returned after ${run.ms} ms, before the 300 ms window passed`)
  assert.match(run.stdout, /^lameduck prestop: taking the app offline: POST http:\/\/127\.0\.0\.1:\d+\/offline\?wait=true$/m)
  assert.match(run.stdout, /^lameduck prestop: offline after 0\.\d s \(window 0\.3 s, sidecar 0 s, in-flight wait 0 s\); 0 requests served while draining, \d+ connections closed$/m)
  assert.equal(run.stderr, '')
})

test('prestop waits for a request in flight, and reports it', async (t) => {
  const { app, admin, url } = await startApp()
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  const slow = request(`${url}/slow?ms=800`)
  await until(() => app.lameduck.lifecycle.inflight.count === 1, 'the slow request in flight')
  const run = await runCommand(prestop, ['--admin', admin])
  assert.equal(run.code, EXIT.OK, run.stderr)
  assert.equal((await slow).statusCode, 200, 'the request in flight was served')
  assert.ok(run.ms >= 600, `returned after ${run.ms} ms, before the request finished`)
  assert.match(run.stdout, /in-flight wait 0\.\d s/)
})

test('prestop on an app that is already offline exits 0 at once', async (t) => {
  const { app, admin } = await startApp()
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  await app.lameduck.offline()
  assert.equal(app.lameduck.state, 'offline')
  const offlineAt = app.lameduck.lifecycle.lastReport!.endedAt
  const run = await runCommand(prestop, ['--admin', admin])
  assert.equal(run.code, EXIT.OK, run.stderr)
  // Not the old drain's numbers as if it had just waited: when, and that nothing was waited for.
  assert.doesNotMatch(run.stdout, /offline after/)
  assert.match(run.stdout, /^lameduck prestop: already offline since (\S+) \([\d.]+ s ago\): nothing to wait for; that drain \(api\) took 0\.\d s$/m)
  assert.equal(run.stdout.match(/since (\S+) /)![1], new Date(offlineAt).toISOString())
})

test('prestop joining a shutdown\'s drain exits 0 although the app is closing by the time it answers', async (t) => {
  const { app, admin } = await startApp({ windows: { clientFetchMs: 600 } })
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  // The signal path drains first (as after SIGTERM); prestop joins the running drain.
  const shutdown = app.lameduck.lifecycle.shutdown('SIGTERM (test)')
  assert.equal(app.lameduck.state, 'draining')
  const run = await runCommand(prestop, ['--admin', admin])
  await shutdown
  assert.equal(app.lameduck.state, 'closing')
  assert.equal(run.code, EXIT.OK, run.stderr)
  assert.match(run.stdout, /offline after 0\.\d s \(window 0\.6 s.*; the app is closing now$/m)
})

test('prestop with a wrong or missing token exits 4 with the 401 reason, and changes nothing', async (t) => {
  const { app, admin } = await startApp({ admin: { port: 0, token: 's3cret-token' } })
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')

  const wrong = await runCommand(prestop, ['--admin', admin, '--token', 'not-the-token'])
  assert.equal(wrong.code, EXIT.UNAUTHORIZED)
  assert.match(wrong.stderr, /^lameduck prestop: the admin listener rejected the token \(401\): --token \/ LAMEDUCK_TOKEN must equal the app's admin\.token$/m)

  const missing = await runCommand(prestop, ['--admin', admin])
  assert.equal(missing.code, EXIT.UNAUTHORIZED)
  assert.match(missing.stderr, /requires a token \(401\): pass the app's admin\.token with --token or the LAMEDUCK_TOKEN environment variable/)
  assert.equal(app.lameduck.state, 'serving')

  // The token from the environment, as in a container whose env holds LAMEDUCK_TOKEN.
  const ok = await runCommand(prestop, ['--admin', admin], { env: { LAMEDUCK_TOKEN: 's3cret-token' } })
  assert.equal(ok.code, EXIT.OK, ok.stderr)
  assert.equal(app.lameduck.state, 'offline')
})

test('prestop against nothing listening exits 3 and says what to check', async (t) => {
  const { port, close } = await deadPort()
  t.after(close)
  const run = await runCommand(prestop, ['--admin', `http://127.0.0.1:${port}`])
  assert.equal(run.code, EXIT.UNREACHABLE)
  assert.match(run.stderr, new RegExp(`nothing is listening at 127\\.0\\.0\\.1:${port} \\(connection refused\\)\\. Is the app running, and is admin\\.port right\\?`))
})

test('prestop pointed at the app port instead of the admin port says so', async (t) => {
  const { app, url } = await startApp()
  t.after(() => app.close())
  const run = await runCommand(prestop, ['--admin', url])
  assert.equal(run.code, EXIT.FAILED)
  assert.match(run.stderr, /has no \/offline route \(404\): --admin must point at the lameduck admin listener/)
})

test('prestop --timeout gives up with the state it saw; the app keeps draining', async (t) => {
  const { app, admin } = await startApp({ windows: { clientFetchMs: 3_000 } })
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  const run = await runCommand(prestop, ['--admin', admin, '--timeout', '1.5'])
  assert.equal(run.code, EXIT.FAILED)
  assert.match(run.stderr, /not offline after 1\.5 s \(state 'draining' in phase 'window', 0 in flight\): the app keeps draining; raise --timeout/)
  assert.equal(app.lameduck.state, 'draining')
})

test('prestop shows progress: one line a second without a TTY, a redrawn bar on a TTY', async (t) => {
  const { app, admin } = await startApp({ windows: { clientFetchMs: 2_600 } })
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  const lines = await runCommand(prestop, ['--admin', admin])
  assert.equal(lines.code, EXIT.OK, lines.stderr)
  const progress = lines.stdout.split('\n').filter((l) => l.includes('draining · window'))
  assert.ok(progress.length >= 2 && progress.length <= 3, `expected a line a second over 2.6 s:\n${lines.stdout}`)
  assert.match(progress[0]!, /^lameduck prestop: draining · window \d\.\d s left of 2\.6 s · 0 in flight · 0 requests while draining$/)
  assert.ok(!lines.stdout.includes('\r') && !lines.stdout.includes(`${ESC}[`), 'no terminal control characters in plain output')

  await app.lameduck.online()
  await until(() => app.lameduck.state === 'serving', 'serving again')
  const bar = await runCommand(prestop, ['--admin', admin], { tty: true })
  assert.equal(bar.code, EXIT.OK, bar.stderr)
  assert.match(bar.stdout, /\rlameduck prestop \[█*░+\] draining · window \d\.\d s left of 2\.6 s · 0 in flight/)
  assert.ok(bar.out.chunks.filter((c) => c.startsWith('\rlameduck prestop [')).length >= 5, 'the bar is redrawn between polls')
  assert.match(bar.stdout, new RegExp(`\\r${ESC}\\[Klameduck prestop: offline after 2\\.\\d s`), 'the bar is cleared before the final line')
})

test('prestop as a child process through bin.ts: exit 0, and SIGTERM interrupts it', async (t) => {
  const { app, admin } = await startApp({ windows: { clientFetchMs: 400 } })
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  const run = await runBin(['prestop', '--admin', admin])
  assert.equal(run.code, 0, run.stderr)
  assert.equal(app.lameduck.state, 'offline')
  assert.match(run.stdout, /lameduck prestop: offline after 0\.\d s \(window 0\.4 s/)

  const { app: slowApp, admin: slowAdmin } = await startApp({ windows: { clientFetchMs: 10_000 } })
  t.after(() => slowApp.close())
  await until(() => slowApp.lameduck.state === 'serving', 'serving')
  let pid = 0
  const interrupted = runBin(['prestop', '--admin', slowAdmin], { onSpawn: (p) => { pid = p } })
  await until(() => slowApp.lameduck.state === 'draining', 'draining')
  process.kill(pid, 'SIGTERM')
  const result = await interrupted
  assert.equal(result.code, 1)
  assert.match(result.stderr, /interrupted before the app was offline \(it keeps draining on its own\)/)
  // Order, not speed: the CLI exited while the 10 s window still runs.
  assert.equal(slowApp.lameduck.state, 'draining')
})

test('prestop rejects bad flags with a UsageError (main turns it into exit 2)', async () => {
  await assert.rejects(runCommand(prestop, ['--admin', 'ftp://x']), /--admin must be an http:\/\/ or https:\/\/ URL/)
  await assert.rejects(runCommand(prestop, ['--timeout', 'soon']), /--timeout must be a number of seconds/)
  await assert.rejects(runCommand(prestop, ['--colour']), /Unknown option '--colour'/)
})
