import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { fork, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { request } from 'undici'
import { until } from './helpers.ts'

interface Line { t: number, event?: string, to?: string, msg?: string, url?: string, admin?: string, [k: string]: unknown }

// Waits bound what a starved machine takes to start a child (tens of seconds at load 25 on 2 cores).
const START_MS = 60_000

/** A child app; killed when the test ends however it ends, so a failed assertion never leaves it running. */
function spawnApp (t: TestContext, options: Record<string, unknown>) {
  const child = fork(new URL('./fixtures/signal-app.ts', import.meta.url), [JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
  t.after(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const lines: Line[] = []
  createInterface({ input: child.stdout! }).on('line', (l) => { try { lines.push(JSON.parse(l)) } catch {} })
  const exited = new Promise<{ code: number | null, at: number }>((resolve) => child.once('exit', (code) => resolve({ code, at: Date.now() })))
  return { child, lines, exited }
}

async function serving (lines: Line[]): Promise<{ url: string, admin: string }> {
  await until(() => lines.some((l) => l.event === 'state' && l.to === 'serving'), 'the child to serve', START_MS)
  const l = lines.find((x) => x.event === 'listening')!
  return { url: l.url!, admin: l.admin! }
}

function kill (child: ChildProcess, signal: NodeJS.Signals): number {
  child.kill(signal)
  return Date.now()
}

test('SIGTERM while serving: deregistered, still serving through the window, exit 0 after the drain', async (t) => {
  const WINDOW = 3_000
  const { child, lines, exited } = spawnApp(t, { windows: { clientFetchMs: WINDOW }, maxRequestMs: 2_000 })
  const { url } = await serving(lines)
  const sent = kill(child, 'SIGTERM')
  await until(() => lines.some((l) => l.event === 'deregister'), 'deregistration', START_MS)
  const deregisteredAt = lines.find((l) => l.event === 'deregister')!.t
  assert.ok(deregisteredAt >= sent)
  // Serving after the deregistration, marked as draining (two requests: the window is ample for them, even starved).
  for (let i = 0; i < 2; i++) {
    const res = await request(`${url}/hello`)
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['x-lameduck-state'], 'draining')
    await res.body.dump()
  }
  const { code, at } = await exited
  assert.equal(code, 0)
  assert.ok(at - deregisteredAt >= WINDOW, `exited only after the window (${at - deregisteredAt} ms)`)
  const states = lines.filter((l) => l.event === 'state').map((l) => l.to)
  assert.deepEqual(states, ['waiting', 'registering', 'serving', 'draining', 'offline', 'closing', 'stopped'])
  // Deregistered at once: at the start of the window, not at its end.
  const offlineLine = lines.findIndex((l) => l.event === 'state' && l.to === 'offline')
  assert.ok(lines.findIndex((l) => l.event === 'deregister') < offlineLine, 'deregistered before the window ended')
})

test('SIGTERM with a drain longer than shutdownTimeoutMs exits at the bound and logs what was cut', async (t) => {
  const { child, lines, exited } = spawnApp(t, { windows: { clientFetchMs: 300 }, maxRequestMs: 10_000, shutdownTimeoutMs: 1_000 })
  const { url, admin } = await serving(lines)
  const slow = request(`${url}/slow?ms=10000`).catch((err: Error) => err)
  // The slow request is in flight before the signal (an event, not a guessed delay).
  await until(async () => ((await (await request(`${admin}/status`)).body.json()) as { inflight: number }).inflight === 1, 'the slow request in flight', START_MS)
  const sent = kill(child, 'SIGTERM')
  const { code, at } = await exited
  assert.equal(code, 1)
  assert.ok(at - sent >= 1_000, `exited at the bound, not before (${at - sent} ms)`)
  const cut = lines.find((l) => typeof l.msg === 'string' && l.msg.includes('shutdownTimeoutMs (1000 ms) reached'))
  assert.ok(cut, 'the cut is logged')
  assert.match(cut.msg!, /cutting: 1 request\(s\) in flight/)
  assert.ok(await slow instanceof Error, 'the cut request was cut')
})

test('a SIGTERM during draining lets the running sequence finish; a second signal forces exit', async (t) => {
  const { child, lines, exited } = spawnApp(t, { windows: { clientFetchMs: 700 } })
  const { admin } = await serving(lines)
  const started = Date.now()
  await request(`${admin}/offline`, { method: 'POST' })
  await new Promise((resolve) => setTimeout(resolve, 100))
  kill(child, 'SIGTERM') // kubelet: preStop `curl /offline; sleep 0` returned early
  const first = await exited
  assert.equal(first.code, 0)
  assert.ok(first.at - started >= 700, `the window was not cut short (${first.at - started} ms)`)

  const second = spawnApp(t, { windows: { clientFetchMs: 5_000 } })
  await serving(second.lines)
  kill(second.child, 'SIGTERM')
  await until(() => second.lines.some((l) => l.event === 'state' && l.to === 'draining'), 'draining', START_MS)
  const forced = kill(second.child, 'SIGINT')
  const r = await second.exited
  assert.equal(r.code, 1)
  assert.ok(r.at >= forced)
  assert.ok(!second.lines.some((l) => l.event === 'state' && l.to === 'offline'), 'second signal exits at once, without waiting for the 5 s window')
  assert.ok(second.lines.some((l) => typeof l.msg === 'string' && /second signal SIGINT after SIGTERM/.test(l.msg)))
})

test('the signal path says what it does when it does it: the plan for the state it finds, the drain, the close, the real exit', async (t) => {
  const messages = (lines: Line[]): string[] => lines.filter((l) => typeof l.msg === 'string' && /^lameduck: /.test(l.msg)).map((l) => l.msg!)
  const serving = spawnApp(t, { windows: { clientFetchMs: 300 } })
  await until(() => serving.lines.some((l) => l.event === 'state' && l.to === 'serving'), 'serving', START_MS)
  kill(serving.child, 'SIGTERM')
  assert.equal((await serving.exited).code, 0)
  const said = messages(serving.lines)
  const order = [/^lameduck: SIGTERM received in state serving: running the offline sequence/, /^lameduck: offline sequence done \d+ ms after SIGTERM; closing the app/, /^lameduck: closed \d+ ms after SIGTERM \(exit code 0\)/, /^lameduck: ending the process with exit code 0 once its event loop is empty/, /^lameduck: process exiting with code 0, \d+ ms after the app closed/]
  const at = order.map((re) => said.findIndex((m) => re.test(m)))
  assert.ok(at.every((i, k) => i >= 0 && (k === 0 || i > at[k - 1]!)), `in this order ${at.join(', ')}:\n${said.join('\n')}`)

  const offline = spawnApp(t, { windows: { clientFetchMs: 200 } })
  const { admin } = await serving2(offline.lines)
  await (await request(`${admin}/offline?wait=true`, { method: 'POST' })).body.dump()
  kill(offline.child, 'SIGTERM')
  assert.equal((await offline.exited).code, 0)
  const later = messages(offline.lines)
  assert.ok(later.some((m) => /^lameduck: SIGTERM received in state offline: already offline since \d{4}-\d\d-\d\dT[\d:.]+Z; closing \(nothing to drain\)/.test(m)), later.join('\n'))
  assert.ok(!later.some((m) => /running the offline sequence|offline sequence done/.test(m)), 'no drain claimed when there was none')
  const closed = offline.lines.find((l) => /^lameduck: closed \d+ ms after SIGTERM/.test(l.msg ?? ''))!
  const exiting = offline.lines.find((l) => /^lameduck: process exiting/.test(l.msg ?? ''))!
  assert.ok(offline.lines.indexOf(exiting) > offline.lines.indexOf(closed), 'the exit is said after the close, when it happens')
})

const serving2 = serving
