// How prestop reads the offline report's newer fields, and its bounded --timeout.
// The deregistration field comes from newer apps; an admin listener stand-in
// answers with the wire format here, and the real app covers the absent field.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { prestop } from '../src/commands/prestop.ts'
import { EXIT } from '../src/command.ts'
import { main } from '../src/main.ts'
import { memoryRegistry, type Instance } from '@lameduck/core'
import { Capture, runCommand, startApp, until } from './helpers.ts'

/** An admin listener that answers /offline?wait=true with `report`, and /status with serving until then. */
async function adminAnswering (report: Record<string, unknown>, after = 'offline'): Promise<{ server: Server, url: string }> {
  let state = 'serving'
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json')
    if (req.url?.startsWith('/offline')) {
      state = after
      res.end(JSON.stringify({ state, report, connections: { closedWhileDraining: 0 } }))
    } else {
      res.end(JSON.stringify({ state }))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

const report = (extra: Record<string, unknown>): Record<string, unknown> => ({
  outcome: 'offline', reason: 'admin /offline', startedAt: Date.now(), endedAt: Date.now() + 60_000, totalMs: 1200, windowMs: 1000, sidecarMs: 0, inflightWaitMs: 200, requestsWhileDraining: 3, problems: [], ...extra
})

test('prestop: an unconfirmed deregistration is its own exit code (5), and says consumers may still route here', async (t) => {
  const { server, url } = await adminAnswering(report({ deregistration: { state: 'unconfirmed', attempts: 4, lastError: 'registry unreachable', confirmedAt: null }, problems: [{ step: 'deregister', message: 'registry unreachable' }] }))
  t.after(() => server.close())
  const run = await runCommand(prestop, ['--admin', url])
  assert.equal(run.code, EXIT.UNCONFIRMED)
  assert.equal(EXIT.UNCONFIRMED, 5)
  assert.match(run.stdout, /problem: deregister: registry unreachable/)
  assert.match(run.stderr, /^lameduck prestop: offline after 1\.2 s .*; but the registry never confirmed the deregistration \(4 attempts, last error: registry unreachable\): consumers may still route to this app/m)

  // Cut short by the shutdown budget while unconfirmed: still 5, not the generic 1.
  const cut = await adminAnswering(report({ outcome: 'cut', deregistration: { state: 'unconfirmed', attempts: 1, lastError: null, confirmedAt: null } }), 'closing')
  t.after(() => cut.server.close())
  const c = await runCommand(prestop, ['--admin', cut.url])
  assert.equal(c.code, EXIT.UNCONFIRMED)
  assert.match(c.stderr, /the drain was cut short .*; but the registry never confirmed the deregistration/)

  // Confirmed, and absent (an app from before the field), are both a plain 0.
  for (const extra of [{ deregistration: { state: 'confirmed', attempts: 1, lastError: null, confirmedAt: Date.now() } }, {}]) {
    const ok = await adminAnswering(report(extra))
    t.after(() => ok.server.close())
    const r = await runCommand(prestop, ['--admin', ok.url])
    assert.equal(r.code, EXIT.OK, r.stderr)
    assert.match(r.stdout, /offline after 1\.2 s/)
  }
})

async function cli (argv: string[]): Promise<{ code: number, stderr: string }> {
  const stderr = new Capture()
  const code = await main(argv, { stdout: new Capture(), stderr, env: {}, signal: new AbortController().signal })
  return { code, stderr: stderr.text }
}

test('every seconds flag has an upper bound (timers overflow past 24.8 days and fire after 1 ms): exit 2 naming the flag', async () => {
  const flags: Array<[string, string]> = [['prestop', '--timeout'], ['wait-ready', '--timeout'], ['wait-ready', '--interval'], ['wait-drained', '--timeout'],
    ['wait-drained', '--interval'], ['envoy-drain', '--timeout'], ['envoy-drain', '--drain-delay'], ['envoy-drain', '--check-interval']]
  for (const [command, flag] of flags) {
    const r = await cli([command, flag, '3000000'])
    assert.equal(r.code, EXIT.USAGE, `${command} ${flag}: ${r.stderr}`)
    assert.match(r.stderr, new RegExp(`^lameduck ${command}: ${flag} must be at most 86400 seconds \\(24 h\\), e\\.g\\. ${flag} 300 \\(got '3000000'\\)`, 'm'))
  }
  for (const [command, flag] of [['plan', '--max-request-ms'], ['plan', '--client-fetch-ms'], ['doctor', '--max-request-ms']]) {
    const r = await cli([command!, '--windows', 'nacos', flag!, '9999999999', ...(command === 'doctor' ? ['x.yaml'] : [])])
    assert.equal(r.code, EXIT.USAGE, `${command} ${flag}: ${r.stderr}`)
    assert.match(r.stderr, new RegExp(`${flag} must be at most 86400000 ms \\(24 h\\)`))
  }
})

test('prestop --timeout at the bound waits for the drain (it does not fire at once)', async (t) => {
  const { app, admin } = await startApp()
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  const run = await runCommand(prestop, ['--admin', admin, '--timeout', '86400'])
  assert.equal(run.code, EXIT.OK, run.stderr)
  assert.ok(run.ms >= 250, `returned after ${run.ms} ms, before the 300 ms window passed`)
  assert.equal(app.lameduck.state, 'offline')
})

test('prestop against a real app whose registry never confirms the deregistration: exit 5 with the attempts and the last error', async (t) => {
  const registry = memoryRegistry()
  const failing = {
    register: (i: Instance) => registry.register(i),
    deregister: async () => { throw new Error('registry unreachable: connect ECONNREFUSED 127.0.0.1:8761') },
    close: () => registry.close()
  }
  // A small shutdown budget bounds the wait for a confirmation that never comes.
  const { app, admin } = await startApp({ registry: failing, shutdownTimeoutMs: 1_500, maxRequestMs: 200 })
  t.after(() => app.close())
  await until(() => app.lameduck.state === 'serving', 'serving')
  const run = await runCommand(prestop, ['--admin', admin])
  assert.equal(run.code, EXIT.UNCONFIRMED, run.stderr)
  assert.match(run.stderr, /never confirmed the deregistration \(\d+ attempts?, last error: .*ECONNREFUSED/)
})
