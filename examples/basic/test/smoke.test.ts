// The basic example boots, registers after its delay, and goes offline under traffic without a failure.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { buildServer } from '../src/server.ts'

test('examples/basic: serving, then offline with every request answered', async (t) => {
  const { app, registry } = await buildServer({ port: 0, adminPort: 0, windowMs: 300 })
  t.after(() => app.close())
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const state = (): string => app.lameduck.state
  const deadline = Date.now() + 60_000 // a starved machine: a bound, not an expectation
  while (state() !== 'serving' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(state(), 'serving')
  assert.equal(registry.registered('hello').length, 1)
  const first = await request(`${url}/hello`)
  assert.equal(first.statusCode, 200)
  assert.deepEqual(await first.body.json(), { hello: 'world', state: 'serving' })
  const offline = request(`${app.lameduck.adminUrl}/offline?wait=true`, { method: 'POST' })
  let marked = 0
  while (state() !== 'offline') {
    const res = await request(`${url}/hello`)
    assert.equal(res.statusCode, 200)
    if (res.headers['x-lameduck-state'] === 'draining') marked++
    assert.equal((await res.body.json() as { hello?: string }).hello, 'world', 'GET /hello is the app\'s route')
  }
  const report = (await (await offline).body.json() as { report: { outcome: string, windowMs: number } }).report
  assert.equal(report.outcome, 'offline')
  assert.equal(report.windowMs, 300)
  // Served through the window, and told in-band (a count, not a rate: a busy machine serves fewer).
  assert.ok(marked >= 1, 'responses while draining carry x-lameduck-state: draining')
  assert.equal(registry.registered('hello').length, 0)
})
