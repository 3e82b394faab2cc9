import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { runEurekaCli } from '@lameduck/devkit'
import { body, call, until } from './eureka-helpers.ts'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/** Runs `runEurekaCli(args)` in a child process, the way the devkit bin will. */
function cli (args: string[]): { out: () => string, err: () => string, exit: Promise<number | null>, kill: (sig: NodeJS.Signals) => void } {
  const child = spawn(process.execPath, [
    '--conditions=@lameduck/source', '--input-type=module', '-e',
    "import { runEurekaCli } from '@lameduck/devkit'; await runEurekaCli(process.argv.slice(1))",
    '--', ...args
  ], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => { out += d.toString() })
  child.stderr.on('data', (d: Buffer) => { err += d.toString() })
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return { out: () => out, err: () => err, exit, kill: (sig) => child.kill(sig) }
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`the CLI prints its address, serves, and stops cleanly on ${signal}`, async () => {
    const p = cli(['--port', '0', '--response-cache-update-ms', '200', '--no-readonly-cache'])
    try {
      const line = await until(() => /listening on (http:\/\/\S+)/.exec(p.out()), 'the address line', { timeoutMs: 60_000, intervalMs: 20 })
      const url = line![1]!
      await until(() => /read-only cache off/.test(p.out()), 'the settings line', { timeoutMs: 5_000, intervalMs: 20 })
      assert.equal((await call('POST', `${url}/apps/orders`, { body: body('o1') })).status, 204)
      assert.equal((await call('GET', `${url}/apps`)).json.applications.application[0].instance[0].instanceId, 'o1')
      p.kill(signal)
      assert.equal(await p.exit, 0, p.err())
      assert.match(p.out(), /eureka: stopped/)
    } finally {
      p.kill('SIGKILL')
    }
  })
}

test('the CLI rejects unknown flags and bad numbers, and prints help', async () => {
  const bad = cli(['--port', '0', '--cache', '5'])
  assert.notEqual(await bad.exit, 0)
  assert.match(bad.err(), /Unknown option '--cache'/)
  await assert.rejects(runEurekaCli(['--port', 'eighty']), /--port: must be a number, got 'eighty'/)
  let help = ''
  await runEurekaCli(['--help'], { stdout: { write: (s: string) => { help += s } } })
  assert.match(help, /--response-cache-update-ms N/)
  assert.match(help, /--no-readonly-cache/)
})

test('runEurekaCli stops on an abort signal (in-process)', async () => {
  const ac = new AbortController()
  let out = ''
  const running = runEurekaCli(['--port', '0', '--lease-duration-ms', '5000', '--no-lease-expiry-bug'], { stdout: { write: (s: string) => { out += s } }, signal: ac.signal })
  const url = (await until(() => /listening on (http:\/\/\S+)/.exec(out), 'the address line', { timeoutMs: 5_000, intervalMs: 5 }))![1]!
  await until(() => /leases 5000 ms, self-preservation on\n/.test(out), 'the settings line', 5_000, 5)
  assert.equal((await call('GET', `${url}/apps`)).status, 200)
  ac.abort()
  await running
  await assert.rejects(call('GET', `${url}/apps`), 'the server is closed')
})

test('--peers 2 starts two servers that replicate; --no-self-preservation turns it off', async (t) => {
  const ac = new AbortController()
  t.after(() => ac.abort())
  let out = ''
  const running = runEurekaCli(['--port', '0', '--peers', '2', '--no-readonly-cache', '--replication-batch-ms', '50', '--no-self-preservation'], { stdout: { write: (s: string) => { out += s } }, signal: ac.signal })
  const urls = (await until(() => { const m = [...out.matchAll(/listening on (http:\/\/\S+) \(apps:/g)].map((x) => x[1]!); return m.length === 2 && m }, 'two address lines', 5_000, 5)) as string[]
  assert.match(out, /self-preservation off, replicating to http:\/\/127\.0\.0\.1:\d+\/eureka every 50 ms/)
  assert.equal((await call('POST', `${urls[0]}/apps/orders`, { body: body('o1') })).status, 204)
  await until(async () => (await call('GET', `${urls[1]}/apps/orders/o1`)).status === 200, 'the second server to get the replicated register')
  ac.abort()
  await running
})

test('bad flag values exit 2 naming the flag typed, not the option behind it (devkit bin)', async () => {
  const bin = fileURLToPath(new URL('../src/bin.ts', import.meta.url))
  const run = (args: string[]): Promise<[number | null, string]> => new Promise((resolve) => {
    const child = spawn(process.execPath, ['--conditions=@lameduck/source', bin, 'eureka', ...args], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    child.stderr.on('data', (d: Buffer) => { err += d.toString() })
    child.on('exit', (code) => resolve([code, err]))
  })
  const cases: Array<[string[], RegExp]> = [
    [['--port', 'abc'], /^lameduck-devkit eureka: --port: must be a number, got 'abc'\n/],
    [['--port', '70000'], /^lameduck-devkit eureka: --port: must be an integer from 0 to 65535, got number 70000\n/],
    [['--port', '0', '--lease-duration-ms=-5'], /^lameduck-devkit eureka: --lease-duration-ms: must be a non-negative number of milliseconds, got number -5\n/],
    [['--port', '0', '--eviction-interval-ms', '0'], /^lameduck-devkit eureka: --eviction-interval-ms: must be a positive number of milliseconds/],
    [['--port', '0', '--renewal-percent-threshold', '1.5'], /^lameduck-devkit eureka: --renewal-percent-threshold: must be a number from 0 to 1/],
    [['--port', '0', '--peer', 'ftp://x'], /^lameduck-devkit eureka: --peer\[0\]: must be an http:\/\/ or https:\/\/ URL/],
    [['--port', '0', '--peers', '0'], /^lameduck-devkit eureka: --peers: must be an integer >= 1, got number 0\n/],
    [['--bogus'], /^lameduck-devkit eureka: Unknown option '--bogus'/]
  ]
  await Promise.all(cases.map(async ([args, message]) => {
    const [code, err] = await run(args)
    assert.equal(code, 2, `${args.join(' ')}: ${err}`)
    assert.match(err, message)
    assert.match(err, /Run 'lameduck-devkit eureka --help' for its options\.\n$/)
  }))
})
