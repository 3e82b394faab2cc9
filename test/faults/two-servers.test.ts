// Two servers attached in one process (a public and an internal port; a Fastify
// app beside a plain server): one SIGTERM drains both, and the process ends
// only once both are done. Each engine alone would end the process when its own
// drain is over, cutting what the other one still waits for.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fork } from 'node:child_process'
import { createInterface } from 'node:readline'
import { request } from 'undici'
import { until } from './helpers.ts'

interface Line { t: number, event: string, server?: string, to?: string, url?: string, second?: string, secondAdmin?: string, code?: number }

function spawnTwo (t: import('node:test').TestContext, kind: string) {
  const child = fork(new URL('./fixtures/two-servers.ts', import.meta.url), [JSON.stringify({ kind, windowMs: 200 })], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
  const lines: Line[] = []
  createInterface({ input: child.stdout! }).on('line', (l) => { try { lines.push(JSON.parse(l) as Line) } catch {} })
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
  let done = false
  exited.then(() => { done = true }, () => {})
  t.after(async () => { if (!done) { child.kill('SIGKILL'); await exited } })
  return { child, lines, exited }
}

for (const kind of ['node+node', 'fastify+node']) {
  test(`${kind}: SIGTERM drains both servers; a long request on the second completes before the process ends (exit 0)`, async (t) => {
    const app = spawnTwo(t, kind)
    const listening = await until(() => app.lines.find((l) => l.event === 'listening'), 'listening')
    await until(() => app.lines.filter((l) => l.event === 'state' && l.to === 'serving').length === 2, 'both serving')
    // The first server's drain is over in ~0.2 s; the request on the second runs 3 s.
    const slow = request(`${listening!.second!}/slow?ms=3000`).then(async (res) => ({ status: res.statusCode, body: await res.body.json() }), (err: Error) => err)
    const quick = await request(`${listening!.url!}/slow?ms=0`)
    await quick.body.dump()
    await until(async () => ((await (await request(`${listening!.secondAdmin!}/status`)).body.json()) as { inflight: number }).inflight === 1, 'the long request in flight')
    app.child.kill('SIGTERM')
    const result = await slow
    assert.ok(!(result instanceof Error), `the long request was cut: ${String(result)}`)
    assert.equal(result.status, 200)
    assert.deepEqual(result.body, { server: 'internal', slept: 3000 })
    assert.equal(await app.exited, 0)
    const stopped = app.lines.filter((l) => l.event === 'state' && l.to === 'stopped').map((l) => l.server).sort()
    assert.deepEqual(stopped, ['internal', 'public'], 'both servers went through their whole offline sequence')
  })
}

test('node+node: a second SIGTERM cuts both servers at once (exit 1), the long request is reset', async (t) => {
  const app = spawnTwo(t, 'node+node')
  const listening = await until(() => app.lines.find((l) => l.event === 'listening'), 'listening')
  await until(() => app.lines.filter((l) => l.event === 'state' && l.to === 'serving').length === 2, 'both serving')
  const slow = request(`${listening!.second!}/slow?ms=20000`).then((res) => res.statusCode, (err: Error) => err)
  await until(async () => ((await (await request(`${listening!.secondAdmin!}/status`)).body.json()) as { inflight: number }).inflight === 1, 'the long request in flight')
  app.child.kill('SIGTERM')
  await until(() => app.lines.filter((l) => l.event === 'state' && l.to === 'draining').length === 2, 'both draining')
  app.child.kill('SIGTERM')
  assert.equal(await app.exited, 1)
  assert.ok(await slow instanceof Error, 'the request a second signal cut is reset')
})
