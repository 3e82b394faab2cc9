// /offline storms and /offline + /online races on the admin listener. A storm of
// concurrent calls runs one offline sequence and answers every caller; calls
// interleaved in any order end in the state of the last one, with the registry
// agreeing with that state.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Client, request } from 'undici'
import { memoryRegistry, type Registry } from '@lameduck/core'
import { startProvider, until } from '../helpers.ts'
import { prng } from '../fuzz/prng.ts'

/** A memory registry that counts calls and takes 0–`maxDelayMs` per call, so calls overlap. */
function slowRegistry (maxDelayMs: number, seed = 7) {
  const memory = memoryRegistry()
  const r = prng(seed)
  const calls = { register: 0, deregister: 0 }
  const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, r.int(0, maxDelayMs)))
  const registry: Registry = {
    async register (i) { calls.register++; await pause(); await memory.register(i) },
    async deregister (i) { calls.deregister++; await pause(); await memory.deregister(i) },
    close: () => memory.close()
  }
  return { registry, memory, calls }
}

test('/offline storm: 300 concurrent calls (GET, POST, ?wait) run one offline sequence and all get an answer', async (t) => {
  const { registry, memory, calls } = slowRegistry(20)
  const a = await startProvider('a', { registry, windows: { clientFetchMs: 500 } })
  t.after(() => a.app.close())
  const drains: string[] = []
  a.app.lameduck.on('state', (c) => { if (c.to === 'draining') drains.push(c.reason) })
  const started = Date.now()
  const answers = await Promise.all(Array.from({ length: 300 }, async (_, i) => {
    const wait = i % 10 === 0
    const res = await request(`${a.admin}/offline${wait ? '?wait=true' : ''}`, { method: i % 2 === 0 ? 'POST' : 'GET' })
    const body = await res.body.json() as { state: string, startedAt?: number, report?: { startedAt: number, outcome: string } }
    return { status: res.statusCode, wait, body }
  }))
  assert.equal(answers.length, 300)
  assert.deepEqual(new Set(answers.filter((x) => !x.wait).map((x) => x.status)), new Set([202]))
  assert.deepEqual(new Set(answers.filter((x) => x.wait).map((x) => x.status)), new Set([200]))
  const startedAts = new Set(answers.map((x) => x.body.startedAt ?? x.body.report?.startedAt))
  assert.equal(startedAts.size, 1, 'every caller joined the same sequence: ' + JSON.stringify([...new Set(answers.map((x) => JSON.stringify(x.body).slice(0, 300)))].slice(0, 4)))
  assert.ok(answers.filter((x) => x.wait).every((x) => x.body.state === 'offline' && x.body.report!.outcome === 'offline'))
  assert.ok(Date.now() - started >= 500, 'the waiting callers were answered after the window')
  assert.deepEqual(drains, ['admin /offline'], 'one offline sequence')
  assert.equal(calls.deregister, 1, 'one deregistration')
  assert.equal(calls.register, 1)
  assert.deepEqual(memory.registered('orders'), [])
  assert.equal(a.app.lameduck.state, 'offline')
})

test('/offline and /online interleaved in random orders: the last call wins, and the registry agrees', async (t) => {
  const { registry, memory, calls } = slowRegistry(15)
  const a = await startProvider('a', { registry, windows: { clientFetchMs: 150 } })
  t.after(() => a.app.close())
  // One pipelined connection: the server sees the calls in the order they are sent.
  const admin = new Client(a.admin, { pipelining: 1 })
  t.after(() => admin.close())
  const r = prng(20_251_128)
  for (let round = 0; round < 25; round++) {
    const sequence = r.array(1, 12, () => r.pick(['offline', 'online'] as const))
    const answers = await Promise.all(sequence.map(async (action) => {
      const res = await admin.request({ path: `/${action}`, method: r.bool() ? 'POST' : 'GET' })
      await res.body.dump()
      return res.statusCode
    }))
    assert.ok(answers.every((s) => s === 202), `round ${round}: every call answered 202 (${answers.join(',')})`)
    const last = sequence.at(-1)!
    const want = last === 'online' ? 'serving' : 'offline'
    await until(() => a.app.lameduck.state === want, `round ${round} (${sequence.join(' ')}): state ${want}, not ${a.app.lameduck.state}`, { timeoutMs: 5_000 })
    // Settled: the registry holds the instance exactly when it is serving.
    await until(() => (memory.registered('orders').length === 1) === (want === 'serving'), `round ${round}: registry agrees with ${want}`, { timeoutMs: 5_000 })
    assert.equal(memory.registered('orders').length, want === 'serving' ? 1 : 0)
  }
  // Answers to requests to the app are never refused, whatever the races did.
  const res = await request(`${a.url}/work`)
  assert.equal(res.statusCode, 200)
  await res.body.dump()
  assert.ok(calls.register > 10 && calls.deregister > 10, JSON.stringify(calls))
})
