import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fork, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { request } from 'undici'
import { until } from './helpers.ts'

interface Line { t: number, event?: string, to?: string, msg?: string, url?: string, admin?: string, [k: string]: unknown }

function spawnApp (options: Record<string, unknown>) {
  const child = fork(new URL('./fixtures/signal-app.ts', import.meta.url), [JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
  const lines: Line[] = []
  createInterface({ input: child.stdout! }).on('line', (l) => { try { lines.push(JSON.parse(l)) } catch {} })
  const exited = new Promise<{ code: number | null, at: number }>((resolve) => child.once('exit', (code) => resolve({ code, at: Date.now() })))
  return { child, lines, exited }
}

async function serving (lines: Line[]): Promise<{ url: string, admin: string }> {
  await until(() => lines.some((l) => l.event === 'state' && l.to === 'serving'), 'the child to serve', 10_000)
  const l = lines.find((x) => x.event === 'listening')!
  return { url: l.url!, admin: l.admin! }
}

function kill (child: ChildProcess, signal: NodeJS.Signals): number {
  child.kill(signal)
  return Date.now()
}

test('SIGTERM while serving: deregistered, still serving through the window, exit 0 after the drain', async () => {
  const { child, lines, exited } = spawnApp({ windows: { clientFetchMs: 800 }, maxRequestMs: 2_000 })
  const { url } = await serving(lines)
  const sent = kill(child, 'SIGTERM')
  await until(() => lines.some((l) => l.event === 'deregister'), 'deregistration')
  const deregisteredAt = lines.find((l) => l.event === 'deregister')!.t
  assert.ok(deregisteredAt - sent < 300, 'deregistered at once')
  // Serving during the window, marked as draining.
  let served = 0
  while (Date.now() - sent < 600) {
    const res = await request(`${url}/hello`)
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['x-lameduck-state'], 'draining')
    await res.body.dump()
    served++
  }
  assert.ok(served > 3)
  const { code, at } = await exited
  assert.equal(code, 0)
  assert.ok(at - deregisteredAt >= 800, `exited only after the window (${at - deregisteredAt} ms)`)
  const states = lines.filter((l) => l.event === 'state').map((l) => l.to)
  assert.deepEqual(states, ['waiting', 'registering', 'serving', 'draining', 'offline', 'closing', 'stopped'])
})

test('SIGTERM with a drain longer than shutdownTimeoutMs exits at the bound and logs what was cut', async () => {
  const { child, lines, exited } = spawnApp({ windows: { clientFetchMs: 300 }, maxRequestMs: 10_000, shutdownTimeoutMs: 1_000 })
  const { url } = await serving(lines)
  const slow = request(`${url}/slow?ms=10000`).catch((err: Error) => err)
  await new Promise((resolve) => setTimeout(resolve, 50))
  const sent = kill(child, 'SIGTERM')
  const { code, at } = await exited
  assert.equal(code, 1)
  assert.ok(at - sent >= 1_000 && at - sent < 3_000, `exited at the bound (${at - sent} ms)`)
  const cut = lines.find((l) => typeof l.msg === 'string' && l.msg.includes('shutdownTimeoutMs (1000 ms) reached'))
  assert.ok(cut, 'the cut is logged')
  assert.match(cut.msg!, /cutting: 1 request\(s\) in flight/)
  assert.ok(await slow instanceof Error, 'the cut request was cut')
})

test('a SIGTERM during draining lets the running sequence finish; a second signal forces exit', async () => {
  const { child, lines, exited } = spawnApp({ windows: { clientFetchMs: 700 } })
  const { admin } = await serving(lines)
  const started = Date.now()
  await request(`${admin}/offline`, { method: 'POST' })
  await new Promise((resolve) => setTimeout(resolve, 100))
  kill(child, 'SIGTERM') // kubelet: preStop `curl /offline; sleep 0` returned early
  const first = await exited
  assert.equal(first.code, 0)
  assert.ok(first.at - started >= 700, `the window was not cut short (${first.at - started} ms)`)

  const second = spawnApp({ windows: { clientFetchMs: 5_000 } })
  await serving(second.lines)
  kill(second.child, 'SIGTERM')
  await until(() => second.lines.some((l) => l.event === 'state' && l.to === 'draining'), 'draining')
  const forced = kill(second.child, 'SIGINT')
  const r = await second.exited
  assert.equal(r.code, 1)
  assert.ok(r.at - forced < 1_000, 'second signal exits at once')
  assert.ok(second.lines.some((l) => typeof l.msg === 'string' && /second signal SIGINT after SIGTERM/.test(l.msg)))
})
