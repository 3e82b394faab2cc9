// `lameduck-devkit envoy` as a real process: prints its addresses, proxies, and exits on
// SIGTERM or /quitquitquit; bad flags exit 2.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { PassThrough } from 'node:stream'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ENVOY_CLI_HELP, runEnvoyCli } from '../src/envoy/index.ts'
import { raw, startApp } from './envoy-helpers.ts'

const entry = fileURLToPath(new URL('../src/envoy/index.ts', import.meta.url))

interface Proc { child: ChildProcess, url: string, adminUrl: string, output: () => string }

async function spawnEnvoy (args: string[]): Promise<Proc> {
  const script = `import { runEnvoyCli } from ${JSON.stringify(entry)}; process.exitCode = await runEnvoyCli(process.argv.slice(1))`
  const child = spawn(process.execPath, ['--conditions=@lameduck/source', '--input-type=module', '-e', script, '--', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout!.on('data', (c: Buffer) => { out += c })
  child.stderr!.on('data', (c: Buffer) => { out += c })
  // A starved machine takes tens of seconds to start a TypeScript child; a child that never
  // says it started is killed here, or it would keep the test file from ever exiting.
  const deadline = Date.now() + 60_000
  while (!/envoy admin on (\S+)/.test(out)) {
    if (child.exitCode !== null || Date.now() > deadline) { child.kill('SIGKILL'); throw new Error(`envoy did not start: ${out}`) }
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return { child, url: /listening on (\S+)/.exec(out)![1]!, adminUrl: /admin on (\S+)/.exec(out)![1]!, output: () => out }
}

test('runs as a process: proxies, then exits 0 on SIGTERM', async (t) => {
  const app = await startApp()
  t.after(() => app.close())
  const envoy = await spawnEnvoy(['--listen', '0', '--admin', '0', '--upstream', app.url, '--drain-time-s', '0.5'])
  t.after(() => { envoy.child.kill('SIGKILL') })
  assert.match(envoy.output(), new RegExp(`envoy listening on http://127\\.0\\.0\\.1:\\d+ -> ${app.url}\\n`))
  assert.equal((await raw(envoy.url + '/hi')).body, 'app GET /hi')
  assert.equal((await raw(`${envoy.adminUrl}/ready`)).body, 'LIVE\n')
  const info = JSON.parse((await raw(`${envoy.adminUrl}/server_info`)).body) as { command_line_options: Record<string, string> }
  assert.deepEqual([info.command_line_options.drain_time, info.command_line_options.drain_strategy], ['0.500s', 'Immediate'])
  envoy.child.kill('SIGTERM')
  const [code] = await once(envoy.child, 'exit')
  assert.equal(code, 0)
  assert.match(envoy.output(), /envoy: signal, exited\n$/)
})

test('exits 0 after POST /quitquitquit', async (t) => {
  const app = await startApp()
  t.after(() => app.close())
  const envoy = await spawnEnvoy(['--listen', '0', '--admin', '0', '--upstream', app.url])
  t.after(() => { envoy.child.kill('SIGKILL') })
  const exited = once(envoy.child, 'exit')
  assert.equal((await raw(`${envoy.adminUrl}/quitquitquit`, 'POST')).body, 'OK\n')
  const [code] = await exited
  assert.equal(code, 0)
  assert.match(envoy.output(), /\/quitquitquit, exited\n$/)
})

test('flags: help, missing and bad values exit 2 with the reason', async () => {
  const run = async (argv: string[]): Promise<[number, string, string]> => {
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    let out = ''
    let err = ''
    stdout.on('data', (c: Buffer) => { out += c })
    stderr.on('data', (c: Buffer) => { err += c })
    const code = await runEnvoyCli(argv, { stdout, stderr, signal: AbortSignal.abort() })
    return [code, out, err]
  }
  const [helpCode, help] = await run(['--help'])
  assert.equal(helpCode, 0)
  assert.equal(help, ENVOY_CLI_HELP)
  assert.match(help, /Example:\n {2}lameduck-devkit envoy --listen 15006 --upstream http:\/\/127\.0\.0\.1:3000/)
  assert.deepEqual((await run(['--upstream', 'http://127.0.0.1:1'])).slice(0, 1), [2])
  assert.match((await run(['--upstream', 'http://127.0.0.1:1']))[2], /--listen PORT is required/)
  assert.match((await run(['--listen', '0', '--upstream', 'http://x', '--drain-time-s', 'soon']))[2], /--drain-time-s must be a non-negative number, got 'soon'/)
  assert.match((await run(['--listen', '0', '--upstream', 'http://x', '--drain-strategy', 'slow']))[2], /^lameduck-devkit envoy: --drain-strategy: must be one of 'immediate', 'gradual'/)
  assert.match((await run(['--listen', '0', '--upstream', 'ftp://x']))[2], /^lameduck-devkit envoy: --upstream: must be an http:\/\/ URL/)
  assert.equal((await run(['--listen', '0', '--upstream', 'ftp://x']))[0], 2)
  const [adminCode, , adminErr] = await run(['--listen', '0', '--upstream', 'http://x', '--admin', '70000'])
  assert.equal(adminCode, 2)
  assert.match(adminErr, /^lameduck-devkit envoy: --admin: .*70000.*\nRun 'lameduck-devkit envoy --help' for its options\.\n$/)
  assert.equal((await run(['--bogus']))[0], 2)
  assert.match((await run(['--listen', '0', '--upstream', 'http://x', '--retry-on', 'reset']))[2], /^lameduck-devkit envoy: --retry-on: must be 'reset-before-request', 'connect-failure', 'none'/)
  assert.match((await run(['--listen', '0', '--upstream', 'http://x', '--exit-on-zero-active-connections']))[2], /needs --istio/)
  const [istioCode, istioOut] = await run(['--listen', '0', '--admin', '0', '--upstream', 'http://127.0.0.1:1', '--outbound', 'http://127.0.0.1:2', '--istio', '--retry-on', 'none'])
  assert.equal(istioCode, 0)
  assert.match(istioOut, /envoy outbound listening on http:\/\/127\.0\.0\.1:\d+ -> http:\/\/127\.0\.0\.1:2\n/)
  // An aborted signal: starts, prints, stops at once.
  const [code, out] = await run(['--listen', '0', '--admin', '0', '--upstream', 'http://127.0.0.1:1'])
  assert.equal(code, 0)
  assert.match(out, /envoy admin on http:\/\/127\.0\.0\.1:\d+\nenvoy: signal, exited\n/)
})

test('--istio --stats-inclusion-suffixes keeps the request gauges Istio hides (the lab runs each sidecar so)', async (t) => {
  const app = await startApp()
  t.after(() => app.close())
  const stats = async (extra: string[]): Promise<string> => {
    const envoy = await spawnEnvoy(['--listen', '0', '--admin', '0', '--upstream', app.url, '--istio', '--stats-flush-interval-ms', '100', ...extra])
    try {
      await raw(envoy.url + '/hi')
      return (await raw(`${envoy.adminUrl}/stats`)).body
    } finally {
      envoy.child.kill('SIGKILL')
    }
  }
  const [plain, annotated] = await Promise.all([stats([]), stats(['--stats-inclusion-suffixes', 'downstream_rq_active,downstream_rq_total'])])
  assert.doesNotMatch(plain, /downstream_rq_active:/, 'Istio keeps no request gauge by default')
  assert.match(annotated, /downstream_rq_active: \d+/)
  assert.match(annotated, /downstream_rq_total: [1-9]/)
})

test('flags: the stats flags name what is wrong', async () => {
  const err = async (argv: string[]): Promise<string> => {
    const stderr = new PassThrough()
    let text = ''
    stderr.on('data', (c: Buffer) => { text += c })
    assert.equal(await runEnvoyCli(argv, { stdout: new PassThrough(), stderr, signal: AbortSignal.abort() }), 2)
    return text
  }
  assert.match(await err(['--listen', '0', '--upstream', 'http://x', '--stats-inclusion-suffixes', 'downstream_rq_active']), /--stats-inclusion-suffixes needs --istio/)
  assert.match(await err(['--listen', '0', '--upstream', 'http://x', '--stats-flush-interval-ms', 'often']), /--stats-flush-interval-ms must be a non-negative number, got 'often'/)
})
