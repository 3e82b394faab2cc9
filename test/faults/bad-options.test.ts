// Bad input at the two human edges: plugin options and CLI flags. Every mistake
// fails at once with an error (or exit code 2) that names the option or flag,
// never with another error, and leaves nothing listening. Extends the option
// table of packages/fastify/test/admin.test.ts with the cases it does not have
// and a seeded fuzz of whole option objects.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import Fastify from 'fastify'
import { InvalidOptionError, memoryRegistry } from '@lameduck/core'
import { main } from '@lameduck/cli'
import lameduck from '@lameduck/fastify'
import { deadPort } from '@lameduck/test-utils'
import { forAllAsync, prng, seedFromEnv, type Random } from '../fuzz/prng.ts'

/** Registers the plugin; resolves null when it registered, else the error. The app is closed either way. */
async function tryRegister (options: unknown): Promise<(Error & { code?: string, option?: string }) | null> {
  const app = Fastify({ logger: false })
  try {
    await app.register(lameduck, options as never)
    await app.ready()
    return null
  } catch (err) {
    return err as Error
  } finally {
    await app.close()
  }
}

const base = { service: 'orders', signals: false, admin: false } as const

test('plugin options: each mistake fails register with an InvalidOptionError naming the option', async () => {
  const cases: Array<[unknown, string]> = [
    [null, 'service'], [42, 'options'], ['orders', 'options'], // (Fastify hands the plugin {} for null)
    [{ ...base, service: '' }, 'service'], [{ ...base, service: '   ' }, 'service'], [{ ...base, service: 42 }, 'service'],
    [{ ...base, host: '' }, 'host'], [{ ...base, host: 7 }, 'host'],
    [{ ...base, port: 0 }, 'port'], [{ ...base, port: 70_000 }, 'port'], [{ ...base, port: '3000' }, 'port'], [{ ...base, port: 80.5 }, 'port'],
    [{ ...base, instanceId: '' }, 'instanceId'],
    [{ ...base, metadata: [] }, 'metadata'], [{ ...base, metadata: 'v=1' }, 'metadata'], [{ ...base, metadata: { version: 2 } }, 'metadata.version'],
    [{ ...base, delay: Infinity }, 'delay'], [{ ...base, delay: Number.NaN }, 'delay'], [{ ...base, readinessTimeoutMs: -1 }, 'readinessTimeoutMs'],
    [{ ...base, warmup: -1 }, 'warmup'], [{ ...base, weight: Infinity }, 'weight'], [{ ...base, weight: '100' }, 'weight'],
    [{ ...base, maxRequestMs: -1 }, 'maxRequestMs'],
    [{ ...base, windows: { clientFetchMs: -1 } }, 'windows.clientFetchMs'], [{ ...base, windows: { bogusMs: 1 } }, 'windows.bogusMs'],
    [{ ...base, windows: { scale: 0 } }, 'windows.scale'], [{ ...base, windows: [] }, 'windows'], [{ ...base, windows: 5 }, 'windows'],
    [{ ...base, windows: { preset: 'eureka' } }, 'windows.preset'],
    [{ ...base, windows: { serverCacheMs: Number.MAX_VALUE, clientFetchMs: Number.MAX_VALUE } }, 'windows.serverCacheMs'],
    [{ ...base, windows: { serverCacheMs: 2_000_000_000, clientFetchMs: 2_000_000_000 } }, 'shutdownTimeoutMs'],
    [{ ...base, windows: { clientFetchMs: 10_000 }, shutdownTimeoutMs: 5_000 }, 'shutdownTimeoutMs'], [{ ...base, shutdownTimeoutMs: -1 }, 'shutdownTimeoutMs'],
    [{ ...base, sidecar: 'yes' }, 'sidecar'], [{ ...base, sidecar: { envoyAdmin: 5 } }, 'sidecar.envoyAdmin'],
    [{ ...base, sidecar: { envoyAdmin: 'http://127.0.0.1:15000', drainTimeoutMs: -1 } }, 'sidecar.drainTimeoutMs'],
    [{ ...base, sidecar: { envoyAdmin: 'http://127.0.0.1:15000', drain: 'everything' } }, 'sidecar.drain'],
    [{ ...base, sidecar: { envoyAdmin: 'http://127.0.0.1:15000', minDrainMs: 5_000, drainTimeoutMs: 1_000 } }, 'sidecar.minDrainMs'],
    [{ ...base, admin: 'yes' }, 'admin'], [{ ...base, admin: { host: 'example.com', port: 0 } }, 'admin.host'], [{ ...base, admin: { port: -1 } }, 'admin.port'],
    [{ ...base, admin: { port: 0, token: 'short' } }, 'admin.token'], [{ ...base, admin: { port: 0, token: 12345678 } }, 'admin.token'],
    [{ ...base, admin: { host: '10.0.0.1', port: 0 } }, 'admin.token'],
    [{ ...base, signals: 'SIGTERM' }, 'signals'], [{ ...base, signals: [15] }, 'signals'], [{ ...base, signals: ['sigterm'] }, 'signals'],
    [{ ...base, signals: ['SIGTREM'] }, 'signals'], [{ ...base, signals: ['SIGKILL'] }, 'signals'], [{ ...base, signals: ['SIGTERM', 'SIGSTOP'] }, 'signals'],
    [{ ...base, signals: [undefined] }, 'signals'],
    [{ ...base, earlyOffline: 'yes' }, 'earlyOffline'], [{ ...base, earlyOffline: { quietMs: -1 } }, 'earlyOffline.quietMs'],
    [{ ...base, routes: { ready: 'health' } }, 'routes.ready'], [{ ...base, routes: { live: 5 } }, 'routes.live'],
    [{ ...base, registry: { register () {}, deregister () {} } }, 'registry'], [{ ...base, readiness: [() => true, 'db'] }, 'readiness']
  ]
  for (const [options, option] of cases) {
    const err = await tryRegister(options)
    assert.ok(err !== null, `${JSON.stringify(options)} was accepted`)
    assert.ok(err instanceof InvalidOptionError, `${JSON.stringify(options)}: ${err.name}: ${err.message}`)
    assert.equal(err.option, option, `${JSON.stringify(options)}: ${err.message}`)
    assert.ok(err.message.startsWith(`${option}: `) && err.message.length > option.length + 20, `the message says what to do: ${err.message}`)
  }
})

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGUSR2', 'SIGKILL', 'SIGSTOP', 'SIGTREM', 'TERM', '', 'sigterm']

/** A whole option object: mostly plausible fields, some wrong, some unknown. */
function options (r: Random): Record<string, unknown> {
  const o: Record<string, unknown> = { service: r.pick(['orders', 'orders', '', 42, undefined]), signals: false, admin: false }
  const fields: Record<string, () => unknown> = {
    host: () => r.pick(['10.0.0.5', '', 7, undefined]),
    port: () => r.pick([3000, 0, 65_536, -1, '3000', 1.5]),
    instanceId: () => r.pick(['orders-1', '', null]),
    metadata: () => r.pick([{ zone: 'a' }, { n: 1 }, [], 'x', null]),
    delay: () => r.number(),
    readinessTimeoutMs: () => r.number(),
    warmup: () => r.pick([r.number(), '60s']),
    weight: () => r.pick([r.number(), '100']),
    windows: () => r.pick(['eureka-ribbon', 'nacos', 'kubernetes', 'none', 'bogus', { clientFetchMs: r.number() }, { scale: r.number(), preset: 'nacos' }, r.value(1)]),
    maxRequestMs: () => r.number(),
    shutdownTimeoutMs: () => r.pick([r.number(), 200_000]),
    sidecar: () => r.pick([false, { envoyAdmin: 'http://127.0.0.1:1', drainTimeoutMs: r.number() }, { envoyAdmin: r.nasty(10) }, { envoyAdmin: 'http://127.0.0.1:1', drain: r.pick(['listeners', 'healthcheck', false, 'x']) }, r.value(1)]),
    admin: () => r.pick([false, { port: 0 }, { port: 0, host: r.pick(['127.0.0.1', '0.0.0.0', '::1', 'x']), token: r.pick([undefined, 'long-enough-token', 'short']) }, { port: r.pick([-1, 70_000, 'x']) }, r.value(1)]),
    signals: () => r.pick([false, [], r.array(0, 3, () => r.pick(SIGNALS)), 'SIGTERM']),
    earlyOffline: () => r.pick([true, false, { quietMs: r.number() }, 'yes']),
    routes: () => r.pick([false, { ready: '/ready' }, { live: 'live' }, { ready: 5 }]),
    readiness: () => r.pick([[], [async () => true], ['x'], 'x']),
    registry: () => r.pick([undefined, memoryRegistry(), { register () {} }]),
    colour: () => 'blue'
  }
  for (let i = r.int(0, 4); i > 0; i--) {
    const key = r.pick(Object.keys(fields))
    o[key] = fields[key]!()
  }
  // Signals are installed after everything else is checked: give them their own, frequent, chance.
  if (r.bool(0.3)) o.signals = fields.signals!()
  for (const [k, v] of Object.entries(o)) if (v === undefined) delete o[k]
  return o
}

test('plugin options, fuzzed: any option object registers, or fails with an InvalidOptionError naming one of its options', async () => {
  let rejected = 0
  await forAllAsync('plugin options', seedFromEnv(20_251_129), 600, options, async (o) => {
    const err = await tryRegister(o)
    if (err === null) return
    rejected++
    assert.ok(err instanceof InvalidOptionError, `not an InvalidOptionError: ${err.name}: ${err.message}`)
    const top = err.option.split('.')[0]!
    // The option named is one that was given, the required `service`, or shutdownTimeoutMs against a given window.
    assert.ok(top === 'service' || Object.hasOwn(o, top) || (top === 'shutdownTimeoutMs' && 'windows' in o), `the error names '${err.option}', which the options do not have: ${err.message}`)
  })
  assert.ok(rejected > 100 && rejected < 590, `${rejected} of 600 rejected`)
})

class Sink extends Writable {
  text = ''
  override _write (chunk: Buffer | string, _enc: string, done: () => void): void { this.text += String(chunk); done() }
}

async function cli (argv: string[], signal = new AbortController().signal): Promise<{ code: number, stderr: string }> {
  const stdout = new Sink()
  const stderr = new Sink()
  const code = await main(argv, { stdout, stderr, env: {}, signal })
  return { code, stderr: stderr.text }
}

test('CLI flags: each mistake exits 2 with a message naming the flag', async () => {
  const cases: Array<[string[], RegExp]> = [
    [['prestop', '--timeout', 'soon'], /--timeout must be a number of seconds/],
    [['prestop', '--timeout=-5'], /--timeout must be a number of seconds/],
    [['prestop', '--timeout', '-5'], /Option '--timeout' argument is ambiguous/],
    [['prestop', '--timeout', '1e400'], /--timeout must be a number of seconds/],
    [['prestop', '--admin', 'ftp://127.0.0.1:1'], /--admin must be an http:\/\/ or https:\/\/ URL/],
    [['prestop', '--admin', 'http://[::1'], /--admin must be a URL/],
    [['prestop', '--admin'], /--admin <value>' argument missing/],
    [['prestop', '--colour', 'blue'], /Unknown option '--colour'/],
    [['prestop', 'extra'], /Unexpected argument 'extra'|positional/i],
    [['wait-ready', '--interval', '0'], /--interval must be more than 0 seconds/],
    [['wait-ready', '--url', 'ws://127.0.0.1:1/ready'], /--url must be an http:\/\/ or https:\/\/ URL/],
    [['wait-drained', '--interval', 'NaN'], /--interval must be a number of seconds/],
    [['envoy-drain', '--min-open-connections=-1'], /--min-open-connections must be a number of connections/],
    [['envoy-drain', '--min-open-connections', '1.5'], /--min-open-connections must be a number of connections/],
    [['envoy-drain', '--check-interval', '0'], /--check-interval must be more than 0 seconds/],
    [['envoy-drain', '--attempts', '0'], /--attempts must be at least 1/],
    [['envoy-drain', '--mode', 'nuke'], /--mode must be one of/],
    [['envoy-drain', '--mode', 'healthcheck', '--inbound-only'], /--inbound-only applies to --mode listeners/],
    [['plan'], /--windows is required/],
    [['plan', '--windows', 'eureka'], /--windows: unknown preset 'eureka'/],
    [['plan', '--windows', 'nacos', '--port', '70000'], /--port must be 1–65535/],
    [['plan', '--windows', 'nacos', '--max-request-ms=-1'], /--max-request-ms must be a non-negative integer/],
    [['plan', '--windows', 'nacos', '--sidecar', 'linkerd'], /--sidecar must be 'istio' or 'native'/],
    [['plan', '--windows', 'nacos', '--envoy-admin', 'http://127.0.0.1:15000'], /--envoy-admin needs --sidecar/],
    [['doctor'], /give the manifest to check/],
    [['doctor', 'x.yaml', '--max-request-ms', 'slow'], /--max-request-ms must be a non-negative integer/]
  ]
  for (const [argv, message] of cases) {
    const r = await cli(argv)
    assert.equal(r.code, 2, `${argv.join(' ')} → ${r.code}: ${r.stderr}`)
    assert.match(r.stderr, message, argv.join(' '))
    assert.match(r.stderr, new RegExp(`Run 'lameduck ${argv[0]} --help'`))
  }
})

test('CLI argv, fuzzed: never throws, always an exit code from the table, a message on stderr for every failure', async (t) => {
  const r = prng(seedFromEnv(20_251_130))
  const dead = await deadPort()
  t.after(dead.close)
  const commands = ['prestop', 'wait-ready', 'wait-drained', 'envoy-drain', 'plan', 'doctor', 'nope', '']
  const flags = ['--admin', '--url', '--token', '--timeout', '--interval', '--windows', '--port', '--max-request-ms', '--min-open-connections', '--check-interval', '--attempts', '--mode', '--sidecar', '--drain-delay', '--client-fetch-ms', '--json', '--strict', '--bogus', '-x', '--']
  // Addresses that fail at once (refused, no DNS): the fuzz tests the flags, not the network.
  const values = [`127.0.0.1:${dead.port}`, dead.url(), '', '0', '-1', '1.5', '1e400', 'NaN', 'nacos', 'eureka-ribbon', 'listeners', 'x'.repeat(300), '\u0000', '😀', '/dev/null']
  for (let i = 0; i < 300; i++) {
    const argv = [r.pick(commands)]
    for (let k = r.int(0, 5); k > 0; k--) { argv.push(r.pick(flags)); if (r.bool(0.8)) argv.push(r.pick(values)) }
    // Commands that wait are stopped after a short while, as a second signal would.
    const signal = AbortSignal.timeout(300)
    let result
    try {
      result = await cli(argv, signal)
    } catch (err) {
      assert.fail(`lameduck ${argv.join(' ')} threw: ${(err as Error).stack}`)
    }
    assert.ok([0, 1, 2, 3, 4].includes(result.code), `lameduck ${JSON.stringify(argv)} → exit ${result.code}`)
    if (result.code !== 0) assert.ok(result.stderr.length > 0, `lameduck ${JSON.stringify(argv)} → exit ${result.code} with nothing on stderr`)
    assert.doesNotMatch(result.stderr, /unexpected error/, `lameduck ${JSON.stringify(argv)}: ${result.stderr}`)
  }
})
