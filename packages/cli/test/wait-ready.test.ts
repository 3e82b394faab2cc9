import { test } from 'node:test'
import assert from 'node:assert/strict'
import { waitReady } from '../src/commands/wait-ready.ts'
import { EXIT } from '../src/command.ts'
import { deadPort } from '@lameduck/test-utils'
import { runCommand, startApp, until } from './helpers.ts'

test('wait-ready returns once /health/ready turns 200', async (t) => {
  let dbUp = false
  const { app, url } = await startApp({ readiness: [() => dbUp] })
  t.after(() => app.close())
  const waiting = runCommand(waitReady, ['--url', `${url}/health/ready`, '--interval', '0.05'])
  await until(() => app.lameduck.state === 'waiting', 'waiting')
  await new Promise((resolve) => setTimeout(resolve, 300))
  assert.equal(app.lameduck.state, 'waiting', 'still not ready')
  dbUp = true
  const run = await waiting
  assert.equal(run.code, EXIT.OK, run.stderr)
  assert.equal(app.lameduck.state, 'serving')
  assert.ok(run.ms >= 300, `returned after ${run.ms} ms, while the app was still waiting`)
  // No --timeout: it would wait for ever, so returning OK at all is the ready answer seen.
  assert.match(run.stdout, /^lameduck wait-ready: not ready yet: 503 \(state 'waiting'\)$/m)
  assert.match(run.stdout, /^lameduck wait-ready: ready after \d+(\.\d)? s \(http:\/\/127\.0\.0\.1:\d+\/health\/ready\)$/m)
  assert.equal(run.stdout.match(/not ready yet/g)?.length, 1, 'the same answer is logged once, not once per attempt')
})

test('wait-ready times out with the last answer: exit 1 when the app answers, 3 when nothing does', async (t) => {
  const { app, url } = await startApp({ readiness: [() => false] })
  t.after(() => app.close())
  const notReady = await runCommand(waitReady, ['--url', `${url}/health/ready`, '--timeout', '0.5', '--interval', '0.1'])
  assert.equal(notReady.code, EXIT.FAILED)
  assert.ok(notReady.ms >= 450, `gave up after ${notReady.ms} ms, before its 0.5 s timeout`)
  assert.match(notReady.stderr, /^lameduck wait-ready: http:\/\/127\.0\.0\.1:\d+\/health\/ready not ready after 0\.5 s \(last: 503 \(state 'waiting'\)\): the app answers but is not serving yet/m)

  const { port, close } = await deadPort()
  t.after(close)
  const nothing = await runCommand(waitReady, ['--url', `http://127.0.0.1:${port}/health/ready`, '--timeout', '0.3', '--interval', '0.1'])
  assert.equal(nothing.code, EXIT.UNREACHABLE)
  assert.match(nothing.stderr, new RegExp(`not ready after 0\\.3 s \\(last: nothing is listening at 127\\.0\\.0\\.1:${port} \\(connection refused\\)\\): nothing answered: is the app running, and is --url its port and readiness path\\?`))
})

test('wait-ready names a wrong path', async (t) => {
  const { app, url } = await startApp()
  t.after(() => app.close())
  const run = await runCommand(waitReady, ['--url', `${url}/ready`, '--timeout', '0.2', '--interval', '0.1'])
  assert.equal(run.code, EXIT.FAILED)
  assert.match(run.stdout, /404: no route at \/ready; is --url the plugin's routes\.ready path\?/)
})

test('wait-ready stops when the signal aborts', async (t) => {
  const { port, close } = await deadPort()
  t.after(close)
  const controller = new AbortController()
  setTimeout(() => controller.abort(), 200).unref()
  const run = await runCommand(waitReady, ['--url', `http://127.0.0.1:${port}/`, '--timeout', '0'], { signal: controller.signal })
  // --timeout 0 waits for ever: returning at all, with this message, is the abort at work.
  assert.equal(run.code, EXIT.FAILED)
  assert.match(run.stderr, /interrupted before/)
})

test('wait-ready rejects bad flags', async () => {
  await assert.rejects(runCommand(waitReady, ['--interval', '0']), /--interval must be more than 0 seconds/)
  await assert.rejects(runCommand(waitReady, ['--timeout=-1']), /--timeout must be a number of seconds/)
  await assert.rejects(runCommand(waitReady, ['--url', 'http://[bad']), /--url must be a URL like/)
})
