// `lameduck envoy-drain` against the local Envoy from @lameduck/devkit (real proxy, real admin API).
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { PassThrough } from 'node:stream'
import { test } from 'node:test'
import { Client } from 'undici'
import { startEnvoy, type EnvoyOptions, type LocalEnvoy } from '../../devkit/src/envoy/index.ts'
import { until } from '@lameduck/test-utils'
import { UsageError } from '../src/args.ts'
import { EXIT } from '../src/command.ts'
import { envoyDrain } from '../src/commands/envoy-drain.ts'

interface Ctx { after(fn: () => unknown): void }

async function run (argv: string[], options: { env?: NodeJS.ProcessEnv, signal?: AbortSignal } = {}): Promise<{ code: number, out: string, err: string }> {
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  let out = ''
  let err = ''
  stdout.on('data', (c: Buffer) => { out += c })
  stderr.on('data', (c: Buffer) => { err += c })
  const code = await envoyDrain.run({ argv, stdout, stderr, env: options.env ?? {}, signal: options.signal ?? new AbortController().signal })
  return { code, out, err }
}

/** An app that holds /hold until released, with a local Envoy in front. */
async function setup (t: Ctx, options: Partial<EnvoyOptions> = {}): Promise<{ envoy: LocalEnvoy, release(): void, held(): number }> {
  const holding: Array<() => void> = []
  const app = createServer((req, res) => {
    if (req.url === '/hold') holding.push(() => res.end('released'))
    else res.end('ok')
  })
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
  const envoy = await startEnvoy({ upstream: `http://127.0.0.1:${(app.address() as AddressInfo).port}`, drainTimeMs: 60_000, ...options })
  t.after(async () => {
    await envoy.close()
    app.closeAllConnections()
    await new Promise((resolve) => app.close(resolve))
  })
  return { envoy, release: () => { for (const r of holding.splice(0)) r() }, held: () => holding.length }
}

async function keepAliveClient (t: Ctx, envoy: LocalEnvoy): Promise<Client> {
  const client = new Client(envoy.url, { keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 })
  t.after(() => client.close())
  await (await client.request({ method: 'GET', path: '/' })).body.text()
  return client
}

async function waitFor (what: string, check: () => boolean): Promise<void> {
  await until(check, what, { intervalMs: 5 })
}

test('fails health checks, polls until the last connection is gone, exits 0', async (t) => {
  const { envoy } = await setup(t)
  const client = await keepAliveClient(t, envoy)
  const running = run(['--admin', envoy.adminUrl, '--check-interval', '0.02'])
  await waitFor('the connection count to be polled', () => envoy.adminLog.length >= 2)
  assert.equal(envoy.state, 'DRAINING')
  // The next response on the keep-alive connection carries connection: close.
  const res = await client.request({ method: 'GET', path: '/' })
  assert.equal(res.headers.connection, 'close')
  await res.body.text()
  const { code, out, err } = await running
  assert.equal(code, EXIT.OK, err)
  assert.deepEqual(envoy.adminLog.slice(0, 2).map((e) => `${e.method} ${e.url}`), [
    'POST /healthcheck/fail',
    'GET /stats/prometheus?filter=^http\\..*\\.downstream_cx_active$'
  ])
  assert.match(out, /POST \/healthcheck\/fail: OK\n/)
  assert.match(out, /waiting for at most 0 open connection\(s\), checking every 0\.02 s \(contour stats\)\n/)
  assert.match(out, /: 1 open connection\(s\)\n[^]*: 0 open connection\(s\)\n[^]*drained: 0 open connection\(s\) after /)
  assert.equal(err, '')
})

test('--min-open-connections, --drain-delay, --mode listeners --inbound-only, --method istio', async (t) => {
  const { envoy } = await setup(t, { drainTimeMs: 300 })
  await keepAliveClient(t, envoy)
  const started = Date.now()
  const r = await run(['--admin', envoy.adminUrl, '--min-open-connections', '1', '--drain-delay', '0.2', '--mode', 'listeners', '--inbound-only', '--method', 'istio', '--check-interval', '0.02'])
  assert.equal(r.code, EXIT.OK, r.err)
  assert.equal(envoy.adminLog[0]!.url, '/drain_listeners?inboundonly&graceful')
  assert.ok(envoy.adminLog[0]!.at - started >= 200, 'the drain call waited for --drain-delay')
  assert.equal(envoy.adminLog[1]!.url, '/stats?usedonly&filter=downstream_cx_active$')
  assert.match(r.out, /waiting 0\.2 s before draining \(--drain-delay\)\n[^]*drained: 1 open connection\(s\)/)

  // --mode both, and the idle connection is closed in the last third of Envoy's drain time.
  const second = await setup(t, { drainTimeMs: 300 })
  await keepAliveClient(t, second.envoy)
  const both = await run(['--admin', second.envoy.adminUrl, '--mode', 'both', '--check-interval', '0.02'])
  assert.equal(both.code, EXIT.OK, both.err)
  assert.deepEqual(second.envoy.adminLog.slice(0, 2).map((e) => e.url), ['/healthcheck/fail', '/drain_listeners?graceful'])
})

test('--timeout with connections still open: exit 1 with the count', async (t) => {
  const { envoy, release, held } = await setup(t)
  const client = new Client(envoy.url)
  t.after(() => client.close())
  const pending = client.request({ method: 'GET', path: '/hold' }).then((r) => r.body.text())
  await waitFor('the request to be held', () => held() === 1)
  const r = await run(['--admin', envoy.adminUrl, '--check-interval', '0.05', '--timeout', '0.3'])
  assert.equal(r.code, EXIT.FAILED)
  assert.match(r.err, /lameduck envoy-drain: not drained after 0\.3 s \(--timeout\): 1 connection\(s\) still open\n$/)
  release()
  assert.equal(await pending, 'released')
})

test('Envoy not running: exit 3 after the retries, saying so', async (t) => {
  const { envoy } = await setup(t)
  const url = envoy.adminUrl
  await envoy.close()
  const r = await run(['--admin', url, '--attempts', '2'])
  assert.equal(r.code, EXIT.UNREACHABLE)
  assert.match(r.err, /POST \/healthcheck\/fail attempt 1 failed \(Envoy admin unreachable: connect ECONNREFUSED .*\), retrying in \d+ ms\n/)
  assert.match(r.err, new RegExp(`POST /healthcheck/fail failed after 2 attempt\\(s\\): .*ECONNREFUSED.*\\(POST ${url}/healthcheck/fail\\); is Envoy running and --admin right\\?\\n$`))
})

test('not Envoy (404): exit 1 at once, no retry', async (t) => {
  const requests: string[] = []
  const server = createServer((req, res) => { requests.push(`${req.method} ${req.url}`); res.statusCode = 404; res.end('Not Found') })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise((resolve) => server.close(resolve)))
  const r = await run(['--admin', `127.0.0.1:${(server.address() as AddressInfo).port}`])
  assert.equal(r.code, EXIT.FAILED)
  assert.match(r.err, /Envoy admin answered 404: Not Found .*; is --admin Envoy's admin API\?\n$/)
  assert.deepEqual(requests, ['POST /healthcheck/fail'])
})

test('interrupted by a signal while waiting: exit 1', async (t) => {
  const { envoy, held } = await setup(t)
  const client = new Client(envoy.url)
  t.after(() => client.destroy())
  client.request({ method: 'GET', path: '/hold' }).catch(() => {})
  await waitFor('the request to be held', () => held() === 1)
  const ac = new AbortController()
  const running = run(['--admin', envoy.adminUrl, '--check-interval', '0.02'], { signal: ac.signal })
  await waitFor('a poll', () => envoy.adminLog.length >= 2)
  ac.abort(new Error('received SIGTERM'))
  const r = await running
  assert.equal(r.code, EXIT.FAILED)
  assert.match(r.err, /interrupted after .*; Envoy may be left draining\n$/)
})

test('$LAMEDUCK_ENVOY_ADMIN is the default --admin', async (t) => {
  const { envoy } = await setup(t)
  const r = await run(['--check-interval', '0.02'], { env: { LAMEDUCK_ENVOY_ADMIN: envoy.adminUrl } })
  assert.equal(r.code, EXIT.OK, r.err)
})

test('bad flags are usage errors; --help has an example', async () => {
  const usage = async (argv: string[], text: RegExp): Promise<void> => {
    await assert.rejects(run(argv), (e: unknown) => e instanceof UsageError && text.test(e.message))
  }
  await usage(['--mode', 'nope'], /--mode must be one of healthcheck, listeners, both \(got 'nope'\)/)
  await usage(['--method', 'prom'], /--method must be one of contour, istio, json/)
  await usage(['--check-interval', '0'], /--check-interval must be more than 0 seconds/)
  await usage(['--min-open-connections=-1'], /--min-open-connections must be a number of connections/)
  await usage(['--inbound-only'], /--inbound-only applies to --mode listeners or both/)
  await usage(['--admin', 'ftp://x'], /--admin must be an http:\/\/ or https:\/\/ URL/)
  await usage(['--bogus'], /bogus/)
  assert.match(envoyDrain.help, /^Usage: lameduck envoy-drain /)
  assert.match(envoyDrain.help, /Example \(Contour-style, in the shutdown-manager container\):\n {2}lifecycle:/)
  assert.equal(envoyDrain.name, 'envoy-drain')
})
