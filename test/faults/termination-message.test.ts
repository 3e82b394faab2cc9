// The pod's termination message: after SIGTERM the app writes a short account of
// its last drain where `kubectl describe pod` shows it (Kubernetes' termination
// log, or a configured path); a forced exit says what it cut; a path that cannot
// be written gets a warning, and the shutdown goes on.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { spawnApp } from './child.ts'
import { until } from './helpers.ts'

function tempFile (t: import('node:test').TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-term-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return join(dir, 'termination-log')
}

test('SIGTERM: the termination message says how the drain ended (outcome, deregistration, window and what each term rested on, requests while draining, nothing cut)', async (t) => {
  const path = tempFile(t)
  const app = spawnApp(t, { windows: { clientFetchMs: 300 }, terminationMessage: { path } })
  const { url } = await app.listening()
  await app.waitState('serving')
  await (await request(`${url}/slow?ms=0`)).body.dump()
  app.kill('SIGTERM')
  assert.equal((await app.exited).code, 0)
  const message = readFileSync(path, 'utf8')
  assert.match(message, /^lameduck: offline \(SIGTERM\) in \d+\.\d s: deregistration confirmed \(1 attempt\); window 0\.3 s \(registry confirmed: deregistration confirmed \+ 0\.3 s\); sidecar 0\.0 s; in-flight wait \d+\.\d s; \d+ request\(s\) served while draining; nothing cut$/)
})

test('a forced exit (shutdownTimeoutMs) writes what it cut', async (t) => {
  const path = tempFile(t)
  const app = spawnApp(t, { windows: { clientFetchMs: 200 }, maxRequestMs: 10_000, shutdownTimeoutMs: 1_000, terminationMessage: { path } })
  const { url, admin } = await app.listening()
  await app.waitState('serving')
  const slow = request(`${url}/slow?ms=20000`).catch((err: Error) => err)
  await until(async () => ((await (await request(`${admin}/status`)).body.json()) as { inflight: number }).inflight === 1, 'the slow request in flight')
  app.kill('SIGTERM')
  assert.equal((await app.exited).code, 1)
  await slow
  assert.match(readFileSync(path, 'utf8'), /lameduck: forced exit: shutdownTimeoutMs \(1000 ms\) reached; exiting now and cutting: 1 request\(s\) in flight/)
})

test('a termination path that cannot be written: one warning, and the shutdown ends cleanly', async (t) => {
  const app = spawnApp(t, { windows: { clientFetchMs: 100 }, terminationMessage: { path: '/proc/version' } })
  await app.listening()
  await app.waitState('serving')
  app.kill('SIGTERM')
  assert.equal((await app.exited).code, 0)
  assert.ok(app.logged(/cannot write the termination message to \/proc\/version/), 'warned')
})
