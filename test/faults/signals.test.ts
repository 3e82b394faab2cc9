// Signals at awkward moments, on a provider in a child process: SIGTERM while
// waiting to register, while a registration is in flight, twice in a row, and
// followed by /online. (SIGTERM while serving and during draining are in
// packages/fastify/test/signals.test.ts.)
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { until } from './helpers.ts'
import { spawnApp } from './child.ts'

async function inflight (admin: string, n: number): Promise<void> {
  await until(async () => ((await (await request(`${admin}/status`)).body.json()) as { inflight: number }).inflight === n, `${n} request(s) in flight`)
}

test('SIGTERM while waiting to register: in-flight requests finish, nothing is registered, exit 0 at once', async (t) => {
  const app = spawnApp(t, { delay: 30_000, windows: { clientFetchMs: 2_000 } })
  const { url, admin } = await app.listening()
  await app.waitState('waiting')
  const slow = request(`${url}/slow?ms=400`)
  await inflight(admin, 1)
  const sent = app.kill('SIGTERM')
  const res = await slow
  assert.equal(res.statusCode, 200, 'the request in flight was served')
  assert.deepEqual(await res.body.json(), { slept: 400 })
  const { code, at } = await app.exited
  assert.equal(code, 0)
  assert.ok(at >= sent)
  assert.deepEqual(app.events('register-start'), [], 'never registered')
  assert.deepEqual(app.states(), ['waiting', 'closing', 'stopped'], 'no window to wait for an instance never registered (no draining state)')
  assert.equal(app.events('registry-close')[0]?.held, 0)
  assert.ok(app.logged(/SIGTERM received in state waiting/), 'the signal and the state are logged')
})

test('SIGTERM while a registration is in flight: it lands, then it is deregistered and the window runs from there; exit 0', async (t) => {
  // The registration lands inside the window: the window is counted again from the deregistration.
  const app = spawnApp(t, { registerDelayMs: 300, windows: { clientFetchMs: 800 } })
  const { url, admin } = await app.listening()
  await app.waitEvent('register-start')
  const slow = request(`${url}/slow?ms=300`)
  await inflight(admin, 1)
  app.kill('SIGTERM')
  const res = await slow
  assert.equal(res.statusCode, 200)
  await res.body.dump()
  const { code, at } = await app.exited
  assert.equal(code, 0)
  const registered = app.events('register')
  const deregistered = app.events('deregister')
  assert.equal(registered.length, 1, 'the registration in flight completed once, and was not retried')
  assert.equal(deregistered.length, 1, 'and was undone')
  assert.ok(deregistered[0]!.t >= registered[0]!.t, 'deregistered after the registration landed, not before')
  assert.ok(at - deregistered[0]!.t >= 800, `the window ran from the deregistration (${at - deregistered[0]!.t} ms)`)
  assert.equal(app.events('registry-close')[0]?.held, 0, 'nothing left in the registry')
  assert.deepEqual(app.states(), ['waiting', 'registering', 'draining', 'offline', 'closing', 'stopped'], 'never serving')
  assert.ok(app.logged(/SIGTERM received in state registering/))
})

test('SIGTERM while a registration is in flight that lands after the window: deregistered before the exit, nothing left behind', async (t) => {
  const app = spawnApp(t, { registerDelayMs: 800, windows: { clientFetchMs: 300 } })
  await app.listening()
  await app.waitEvent('register-start')
  app.kill('SIGTERM')
  const { code, at } = await app.exited
  assert.equal(code, 0)
  const registered = app.events('register')
  const deregistered = app.events('deregister')
  assert.equal(registered.length, 1)
  assert.equal(deregistered.length, 1, 'the late registration was undone before the process went away')
  assert.ok(deregistered[0]!.t >= registered[0]!.t)
  assert.equal(app.events('registry-close')[0]?.held, 0, 'nothing left in the registry')
  // The window counts from the confirmed deregistration (inside the shutdown budget), not from SIGTERM.
  assert.ok(at - deregistered[0]!.t >= 300, `the window ran from the deregistration (${at - deregistered[0]!.t} ms)`)
  assert.equal(app.logged(/has not confirmed deregistration/), undefined, 'confirmed within the budget: nothing unconfirmed to report')
})

test('SIGTERM twice in a row: the first starts the drain (deregistered at once), the second exits 1 at once and logs the cut', async (t) => {
  const app = spawnApp(t, { windows: { clientFetchMs: 5_000 } })
  const { url } = await app.listening()
  await app.waitState('serving')
  const slow = request(`${url}/slow?ms=5000`).catch((err: Error) => err)
  await until(() => app.logged(/incoming request/) !== undefined, 'the slow request to arrive')
  app.kill('SIGTERM')
  await app.waitEvent('deregister')
  const second = app.kill('SIGTERM')
  const { code, at } = await app.exited
  assert.equal(code, 1)
  assert.ok(at >= second)
  const cut = app.logged(/second signal SIGTERM after SIGTERM/)
  assert.ok(cut, 'the forced exit is logged')
  // Exits at once: still in the window when it cut (and the 5 s request was not waited for).
  assert.match(cut.msg!, /cutting: 1 request\(s\) in flight, \d+ open connection\(s\), \d+ ms of window left \(state draining, phase window\)/)
  assert.ok(app.events('deregister')[0]!.t <= at, 'consumers were told before the exit: deregistered first')
  assert.ok(await slow instanceof Error, 'the request in flight was cut, as the log says')
})

test('SIGTERM then /online: 409, the drain goes on; the same after a preStop /offline', async (t) => {
  for (const preStop of [false, true]) {
    const app = spawnApp(t, { windows: { clientFetchMs: 800 } })
    const { admin } = await app.listening()
    await app.waitState('serving')
    let started = Date.now()
    if (preStop) {
      const off = await request(`${admin}/offline`, { method: 'POST' })
      assert.equal(off.statusCode, 202)
      await off.body.dump()
      started = Date.now()
    }
    app.kill('SIGTERM')
    await app.waitState('draining')
    await until(() => app.logged(/SIGTERM received/) !== undefined, 'the signal to be handled')
    for (const method of ['POST', 'GET'] as const) {
      const res = await request(`${admin}/online`, { method })
      assert.equal(res.statusCode, 409, `${method} /online after SIGTERM${preStop ? ' (after /offline)' : ''}`)
      const body = await res.body.json() as { error: string, message: string, state: string }
      assert.equal(body.state, 'draining')
      assert.match(body.message, /shutting down and cannot go online again/)
    }
    const { code, at } = await app.exited
    assert.equal(code, 0)
    const deregistered = app.events('deregister')
    assert.equal(deregistered.length, 1)
    assert.ok(at - started >= 800 && at - deregistered[0]!.t >= 800, 'the window was not cut short')
    assert.equal(app.events('register').length, 1, 'not registered again')
    assert.deepEqual(app.states(), ['waiting', 'registering', 'serving', 'draining', 'offline', 'closing', 'stopped'])
    assert.ok(app.logged(/online requested/), 'the refused /online is logged')
  }
})
