// `lameduck-devkit nacos`: flags, the printed address, a clean stop on SIGTERM/SIGINT.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { InvalidOptionError } from '@lameduck/core'
import { parseNacosArgs, runNacosCli } from '../src/nacos/index.ts'
import { waitFor } from './nacos-helpers.ts'

test('flags map to server options; bad flags name themselves', () => {
  const { options } = parseNacosArgs(['--port', '0', '--cache-millis', '2000', '--push-delay-ms', '100', '--no-push', '--heart-beat-timeout-ms', '300',
    '--ip-delete-timeout-ms', '900', '--check-interval-ms', '50', '--client-beat-interval-ms', '100', '--no-protect', '--no-beat-reregister', '--push-to', 'peer'])
  assert.deepEqual(options, {
    port: 0,
    cacheMillis: 2000,
    pushDelayMs: 100,
    push: false,
    heartBeatTimeoutMs: 300,
    ipDeleteTimeoutMs: 900,
    checkIntervalMs: 50,
    clientBeatIntervalMs: 100,
    protectThreshold: false,
    beatReregister: false,
    pushTo: 'peer'
  })
  assert.deepEqual(parseNacosArgs([]).options, { port: 8848 })
  assert.deepEqual(parseNacosArgs(['--nodes', '2', '--distro-sync-delay-ms', '1000', '--push-check-interval-ms', '100']).options, { port: 8848, nodes: 2, distroSyncDelayMs: 1000, pushCheckIntervalMs: 100 })
  assert.throws(() => parseNacosArgs(['--cache-millis', 'soon']), (err: unknown) => err instanceof InvalidOptionError && err.option === '--cache-millis')
  assert.throws(() => parseNacosArgs(['--bogus']), (err: unknown) => err instanceof InvalidOptionError && /--bogus/.test(err.message))
})

test('a flag value out of range is named as the flag typed, not the option behind it', async () => {
  const quiet = { out: () => {}, err: () => {} }
  for (const [argv, flag] of [[['--port', '0', '--cache-millis=-5'], '--cache-millis'], [['--port', '70000'], '--port'], [['--port', '0', '--push-retries=-1'], '--push-retries']] as const) {
    await assert.rejects(runNacosCli([...argv, '--quiet'], quiet), (err: unknown) => {
      assert.ok(err instanceof InvalidOptionError, String(err))
      assert.equal(err.option, flag)
      assert.ok(err.message.startsWith(`${flag}: must be`), err.message)
      return true
    })
  }
})

test('runNacosCli prints its address, serves, and --help prints usage', async (t) => {
  const lines: string[] = []
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l), signals: [] }
  assert.equal(await runNacosCli(['--help'], io), undefined)
  assert.match(lines[0]!, /Usage: lameduck-devkit nacos/)
  const server = await runNacosCli(['--port', '0', '--cache-millis', '1234', '--quiet'], io)
  assert.ok(server)
  t.after(() => server.close())
  assert.match(lines.at(-1)!, new RegExp(`listening on ${server.url.replaceAll('.', '\\.')} .*cacheMillis 1234 ms`))
  const res = await fetch(`${server.url}/v1/ns/instance/list?serviceName=orders`)
  assert.equal(((await res.json()) as { cacheMillis: number }).cacheMillis, 1234)
})

test('runNacosCli --nodes 2 starts a cluster; a write on one node reaches the other', async (t) => {
  const lines: string[] = []
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l), signals: [] }
  const server = await runNacosCli(['--port', '0', '--nodes', '2', '--distro-sync-delay-ms', '20', '--push-delay-ms', '0', '--quiet'], io)
  assert.ok(server)
  t.after(() => server.close())
  const serverList = /serverList (\S+) \(distro sync 20 ms\)/.exec(lines.join('\n'))?.[1] ?? ''
  assert.ok(serverList.includes(','), lines.join('\n'))
  const [, other] = serverList.split(',')
  assert.equal(await (await fetch(`${server.url}/v1/ns/instance?serviceName=orders&ip=127.0.0.1&port=8080`, { method: 'POST' })).text(), 'ok')
  await waitFor('the other node to list it', async () => {
    const list = (await (await fetch(`http://${other}/nacos/v1/ns/instance/list?serviceName=orders`)).json()) as { hosts: unknown[] }
    return list.hosts.length === 1
  })
})

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`the CLI stops cleanly on ${signal} and the process exits`, async (t) => {
    const cli = new URL('../src/nacos/cli.ts', import.meta.url).pathname
    const child = spawn(process.execPath, ['--conditions=@lameduck/source', '--input-type=module', '-e',
      `import { runNacosCli } from ${JSON.stringify(cli)}; await runNacosCli(['--port', '0', '--push-delay-ms', '50'])`], { stdio: ['ignore', 'pipe', 'pipe'] })
    // Whatever fails below, the child goes (a live child keeps the test file from exiting).
    t.after(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
    child.stderr.on('data', (chunk: Buffer) => { out += chunk.toString() })
    const url = await waitFor('the address line', () => /listening on (http:\/\/\S+)/.exec(out)?.[1], 60_000)
    assert.equal(((await (await fetch(`${url}/v1/ns/operator/metrics`)).json()) as { status: string }).status, 'UP')
    const register = await fetch(`${url}/v1/ns/instance?serviceName=orders&ip=127.0.0.1&port=8080`, { method: 'POST' })
    assert.equal(await register.text(), 'ok')
    child.kill(signal)
    const [code] = await once(child, 'exit') as [number | null]
    assert.equal(code, 0, out)
    // The exit itself is the proof: a timer or socket left behind would keep the process alive.
    assert.match(out, new RegExp(`received ${signal}, stopping`))
    assert.match(out, /stopped/)
  })
}
