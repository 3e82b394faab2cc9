import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Lifecycle, createLifecycle, resolveLifecycleOptions, memoryRegistry, virtualClock, ClosingError, InvalidTransitionError, InvalidOptionError, type Registry, type Instance, type LifecycleOptions } from '@lameduck/core'

const base = { id: '127.0.0.1:orders:3000', service: 'orders', host: '127.0.0.1', port: 3000 }

function setup (options: Partial<LifecycleOptions> = {}) {
  const clock = virtualClock()
  const registry = memoryRegistry({ clock })
  const lifecycle = createLifecycle({ registry, clock, windows: { serverCacheMs: 30_000, clientFetchMs: 30_000, balancerRefreshMs: 30_000 }, ...options })
  const states: string[] = []
  lifecycle.on('state', (c) => states.push(c.to))
  return { clock, registry, lifecycle, states }
}

test('registers only after delay and readiness, with warmup metadata stamped at registration', async () => {
  let dbUp = false
  const { clock, registry, lifecycle, states } = setup({ delayMs: 5_000, readiness: [() => dbUp], readinessIntervalMs: 1_000, warmupMs: 120_000, weight: 50 })
  const started = lifecycle.start(base)
  await clock.advance(4_999)
  assert.equal(lifecycle.state, 'waiting')
  await clock.advance(10_000) // delay over, readiness still failing
  assert.equal(lifecycle.state, 'waiting')
  assert.equal(registry.registered('orders').length, 0)
  dbUp = true
  const t = clock.now()
  await clock.advance(1_000)
  await started
  assert.equal(lifecycle.state, 'serving')
  const [registered] = registry.registered('orders')
  assert.ok(registered)
  assert.equal(registered.metadata['lameduck.registeredAt'], String(lifecycle.registeredAt))
  assert.ok(lifecycle.registeredAt! >= t, 'registeredAt is taken at registration, not at process start')
  assert.equal(registered.metadata['lameduck.warmup'], '120000')
  assert.equal(registered.metadata['lameduck.weight'], '50')
  assert.equal(registered.metadata.timestamp, registered.metadata['lameduck.registeredAt'])
  assert.equal(registered.metadata.warmup, '120000')
  assert.equal(registered.metadata.weight, '50')
  assert.equal(lifecycle.warming, true)
  await clock.advance(120_000)
  assert.equal(lifecycle.warming, false)
  assert.deepEqual(states, ['waiting', 'registering', 'serving'])
})

test('readiness that never passes fails startup at the timeout', async () => {
  const { clock, lifecycle } = setup({ readiness: [() => { throw new Error('db down') }], readinessTimeoutMs: 3_000, readinessIntervalMs: 1_000 })
  const started = lifecycle.start(base)
  const outcome = assert.rejects(started, /readiness checks \(last failure: readiness\[0\] threw: db down\) did not complete within 3000 ms/)
  await clock.advance(5_000)
  await outcome
  assert.equal(lifecycle.state, 'waiting')
})

test('a readiness check that never settles fails startup at the timeout, and its signal is aborted', async () => {
  const signals: AbortSignal[] = []
  const { clock, lifecycle, registry } = setup({ readiness: [async (signal) => { signals.push(signal!); await new Promise(() => {}); return true }], readinessTimeoutMs: 3_000, readinessIntervalMs: 1_000 })
  let outcome: unknown = null
  const settled = (): unknown => outcome
  const started = lifecycle.start(base).then(() => 'resolved', (err: Error) => err)
  started.then((v) => { outcome = v }, () => {})
  await clock.advance(2_999)
  assert.equal(settled(), null, 'still waiting before the deadline')
  assert.equal(signals[0]!.aborted, false)
  await clock.advance(1)
  const err = settled()
  assert.ok(err instanceof Error, `startup failed at the deadline (got ${String(err)})`)
  assert.match(err.message, /readiness\[0\] did not settle before readinessTimeoutMs/)
  assert.equal(signals[0]!.aborted, true, 'the check was told to stop')
  assert.equal(lifecycle.state, 'waiting')
  assert.deepEqual(registry.registered('orders'), [], 'never registered')
})

test('shutdown during a readiness check that never settles does not wait for it', async () => {
  const { lifecycle } = setup({ readiness: [async () => { await new Promise(() => {}); return true }], readinessTimeoutMs: 60_000 })
  const started = lifecycle.start(base).then(() => 'resolved', () => 'rejected')
  await lifecycle.shutdown('test')
  lifecycle.stopped('test')
  assert.equal(await started, 'resolved', 'the aborted startup settles (as an interruption)')
})

test('offline then online before readiness ever passed: back to waiting, registered only once the checks pass', async () => {
  let dbUp = false
  const { clock, lifecycle, registry, states } = setup({ readiness: [() => dbUp], readinessIntervalMs: 1_000, readinessTimeoutMs: 60_000, delayMs: 10_000 })
  lifecycle.start(base).catch(() => {})
  await clock.advance(2_000)
  const report = await lifecycle.offline('admin')
  assert.equal(report.outcome, 'skipped')
  const online = lifecycle.online('admin')
  await clock.advance(3_000)
  assert.equal(lifecycle.state, 'waiting', 'the checks run first')
  assert.deepEqual(registry.registered('orders'), [], 'not registered while readiness fails')
  dbUp = true
  await clock.advance(1_000)
  await online
  assert.equal(lifecycle.state, 'serving')
  assert.equal(registry.registered('orders').length, 1)
  assert.deepEqual(states, ['waiting', 'offline', 'waiting', 'registering', 'serving'])
})

test('online after a failed startup runs the readiness checks again before registering', async () => {
  let dbUp = false
  const { clock, lifecycle, registry } = setup({ readiness: [() => dbUp], readinessIntervalMs: 1_000, readinessTimeoutMs: 3_000 })
  const failed = assert.rejects(lifecycle.start(base), /did not complete within 3000 ms/)
  await clock.advance(5_000)
  await failed
  const again = lifecycle.online('admin')
  await clock.advance(1_000)
  assert.deepEqual(registry.registered('orders'), [], 'not registered while readiness still fails')
  dbUp = true
  await clock.advance(1_000)
  await again
  assert.equal(lifecycle.state, 'serving')
  assert.equal(registry.registered('orders').length, 1)
})

test('offline deregisters at once, serves through the window, waits for in-flight, then goes offline', async () => {
  const { clock, registry, lifecycle, states } = setup({ maxRequestMs: 10_000 })
  await clockStart(clock, lifecycle)
  lifecycle.inflight.start() // a slow request in flight at /offline
  const done = lifecycle.offline('admin')
  await clock.advance(0)
  assert.equal(lifecycle.state, 'draining')
  assert.equal(registry.registered('orders').length, 0, 'deregistered at once')
  await clock.advance(89_999)
  assert.equal(lifecycle.state, 'draining', 'still draining until the window has passed')
  assert.equal(lifecycle.drain?.phase, 'window')
  await clock.advance(1)
  assert.equal(lifecycle.drain?.phase, 'inflight', 'window over, waiting for the request in flight')
  await clock.advance(3_000)
  lifecycle.inflight.end()
  const report = await done
  assert.equal(lifecycle.state, 'offline')
  assert.equal(report.outcome, 'offline')
  assert.equal(report.windowMs, 90_000)
  assert.equal(report.totalMs, 93_000)
  assert.equal(report.inflightWaitMs, 3_000)
  assert.deepEqual(states.slice(-2), ['draining', 'offline'])
})

test('repeated offline() joins the running sequence; online() from draining and offline re-registers', async () => {
  const { clock, registry, lifecycle } = setup()
  await clockStart(clock, lifecycle)
  const first = lifecycle.offline('admin')
  await clock.advance(10_000)
  const second = lifecycle.offline('admin again')
  assert.equal(first, second, 'the same promise: joined')
  const back = lifecycle.online('admin')
  const cancelled = await first
  assert.equal(cancelled.outcome, 'cancelled')
  await clock.advance(0)
  await back
  assert.equal(lifecycle.state, 'serving')
  assert.equal(registry.registered('orders').length, 1)
  const report = lifecycle.offline()
  await clock.advance(90_000)
  assert.equal((await report).outcome, 'offline')
  assert.equal(registry.registered('orders').length, 0)
  await lifecycle.online()
  assert.equal(lifecycle.state, 'serving')
  assert.equal(registry.registered('orders').length, 1)
})

test('online() while closing is refused; shutdown runs the whole offline sequence first', async () => {
  const { clock, registry, lifecycle, states } = setup()
  await clockStart(clock, lifecycle)
  const down = lifecycle.shutdown('SIGTERM')
  await clock.advance(0)
  assert.equal(lifecycle.state, 'draining')
  await assert.rejects(lifecycle.online(), ClosingError, 'no going back once shutting down')
  await clock.advance(90_000)
  const report = await down
  assert.equal(report?.outcome, 'offline')
  assert.equal(lifecycle.state, 'closing')
  await assert.rejects(lifecycle.online(), (err: unknown) => err instanceof ClosingError && (err as ClosingError).code === 'LAMEDUCK_ERR_CLOSING')
  await lifecycle.stopped()
  assert.deepEqual(states, ['waiting', 'registering', 'serving', 'draining', 'offline', 'closing', 'stopped'])
  assert.equal(registry.registered('orders').length, 0)
})

test('a failing registry never shortens the window and is reported', async () => {
  const clock = virtualClock()
  const calls: string[] = []
  let failDeregister = 3
  const registry: Registry = {
    async register () { calls.push('register') },
    async deregister () { calls.push('deregister'); if (failDeregister-- > 0) throw new Error('503 from registry') },
    async close () {}
  }
  const lifecycle = createLifecycle({ registry, clock, windows: { serverCacheMs: 10_000 }, registryBackoff: { initialMs: 1_000, jitter: 0 }, shutdownTimeoutMs: 60_000 })
  await clockStart(clock, lifecycle)
  const done = lifecycle.offline()
  // attempts at 0, 1 s, 3 s (backoff 1 s, 2 s), success at 7 s (4 s later) → window ends at 17 s
  await clock.advance(16_999)
  assert.equal(lifecycle.state, 'draining', 'the window runs from the confirmed deregistration')
  await clock.advance(1)
  const report = await done
  assert.equal(report.outcome, 'offline')
  assert.equal(report.deregisteredAt! - report.startedAt, 7_000)
  assert.equal(report.totalMs, 17_000)
  assert.equal(report.problems.length, 3)
  assert.match(report.problems[0]!.message, /503 from registry/)
  assert.equal(calls.filter((c) => c === 'deregister').length, 4)
})

test('a registry that is down for the whole drain, default budget: serves until window + 5 s, then reports it unconfirmed', async () => {
  const clock = virtualClock()
  const registry: Registry = { async register () {}, async deregister () { throw new Error('ECONNREFUSED') }, async close () {} }
  // default shutdownTimeoutMs = window 10 s + maxRequestMs 30 s + 5 s; the drain keeps maxRequestMs for the in-flight wait
  const lifecycle = createLifecycle({ registry, clock, windows: { serverCacheMs: 10_000 } })
  await clockStart(clock, lifecycle)
  const done = lifecycle.offline()
  await clock.advance(14_999)
  assert.equal(lifecycle.state, 'draining')
  await clock.advance(1)
  const report = await done
  assert.equal(report.totalMs, 15_000)
  assert.equal(report.deregistration.state, 'unconfirmed')
  assert.match(report.problems.map((p) => p.message).join('\n'), /has not confirmed deregistration/)
  await lifecycle.stopped()
})

test('registration retries until the registry answers', async () => {
  const clock = virtualClock()
  let down = true
  const seen: Instance[] = []
  const registry: Registry = { async register (i) { if (down) throw new Error('ECONNREFUSED'); seen.push(i) }, async deregister () {}, async close () {} }
  const lifecycle = createLifecycle({ registry, clock, registryBackoff: { initialMs: 1_000, maxMs: 1_000, jitter: 0 } })
  const started = lifecycle.start(base)
  await clock.advance(5_000)
  assert.equal(lifecycle.state, 'registering')
  down = false
  await clock.advance(1_000)
  await started
  assert.equal(lifecycle.state, 'serving')
  assert.equal(seen.length, 1)
  assert.ok(lifecycle.status().problems)
})

test('guarded transitions and option validation give clear errors', async () => {
  const { lifecycle } = setup()
  lifecycle.start(base)
  assert.throws(() => lifecycle.start(base), InvalidTransitionError)
  assert.throws(() => createLifecycle({ delayMs: -1 }), (e: unknown) => e instanceof InvalidOptionError && /delayMs: must be a non-negative number/.test((e as Error).message))
  assert.throws(() => createLifecycle({ readiness: ['x'] as never }), /readiness: must be an array of functions/)
  assert.throws(() => createLifecycle({ registry: {} as never }), /registry: must implement register\(\)/)
  assert.throws(() => createLifecycle({ weight: Number.NaN }), /weight: must be a non-negative number/)
  assert.throws(() => createLifecycle({ registryBackoff: { jitter: -1 } }), /registryBackoff\.jitter: must be a number from 0 to 1/)
  await lifecycle.offline()
  assert.equal(lifecycle.state, 'offline', 'offline before registering skips the drain')
  assert.equal(lifecycle.lastReport?.outcome, 'skipped')
})

test('options resolved at an outer edge are trusted: the Lifecycle does not check them again', () => {
  const resolved = resolveLifecycleOptions({ delayMs: 5, warmupMs: 1_000, windows: 'none' })
  assert.throws(() => resolveLifecycleOptions({ warmupMs: -1 }), /warmupMs: must be a non-negative number/)
  const lifecycle = new Lifecycle(resolved)
  assert.equal(lifecycle.options, resolved, 'used as given, not re-resolved')
  assert.equal(lifecycle.options.warmupMs, 1_000)
  // A plain object that only looks resolved is still checked.
  assert.throws(() => new Lifecycle({ ...{ delayMs: -1 } }), /delayMs: must be a non-negative number/)
})

async function clockStart (clock: ReturnType<typeof virtualClock>, lifecycle: ReturnType<typeof createLifecycle>): Promise<void> {
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  assert.equal(lifecycle.state, 'serving')
}

test('offline() while a register() call is in flight deregisters what it registers', async () => {
  const clock = virtualClock()
  const live = new Set<string>()
  let release: () => void = () => {}
  const registry: Registry = {
    async register (i) { await new Promise<void>((resolve) => { release = resolve }); live.add(i.id) },
    async deregister (i) { live.delete(i.id) },
    async close () {}
  }
  const lifecycle = createLifecycle({ registry, clock, windows: { serverCacheMs: 1_000 } })
  lifecycle.start(base)
  await clock.advance(0)
  assert.equal(lifecycle.state, 'registering')
  const done = lifecycle.offline('admin')
  await clock.advance(0)
  release() // the registry accepts the registration after offline() began
  await clock.advance(0)
  assert.equal(live.size, 0, 'deregistered once the in-flight registration landed')
  await clock.advance(1_000)
  assert.equal((await done).outcome, 'offline')
  assert.equal(live.size, 0)
})

test('close while a register() call is in flight deregisters what it registers', async () => {
  const clock = virtualClock()
  const live = new Set<string>()
  let release: () => void = () => {}
  const registry: Registry = {
    async register (i) { await new Promise<void>((resolve) => { release = resolve }); live.add(i.id) },
    async deregister (i) { live.delete(i.id) },
    async close () {}
  }
  const lifecycle = createLifecycle({ registry, clock })
  lifecycle.start(base)
  await clock.advance(0)
  lifecycle.beginClose('app.close()')
  const stopped = lifecycle.stopped()
  release()
  await clock.advance(0)
  await stopped
  assert.equal(live.size, 0)
  assert.equal(lifecycle.state, 'stopped')
})

test('without a registry and with no window, offline reports no problem', async () => {
  const clock = virtualClock()
  const lifecycle = createLifecycle({ clock })
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  const report = await lifecycle.offline()
  assert.equal(report.outcome, 'offline')
  assert.deepEqual(report.problems, [])
  assert.equal(report.deregisteredAt, report.startedAt)
})

test('offline → online → offline before the cancelled run settles: the newer sequence stays in charge', async () => {
  const clock = virtualClock()
  const registry = memoryRegistry({ clock })
  const lifecycle = createLifecycle({ registry, clock, windows: { serverCacheMs: 1_000 } })
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  const first = lifecycle.offline('1')
  const back = lifecycle.online('2')
  await back
  const second = lifecycle.offline('3') // the cancelled first run has not settled yet
  assert.equal((await first).outcome, 'cancelled')
  assert.equal(lifecycle.state, 'draining')
  assert.ok(lifecycle.drain !== null, 'the running sequence is still tracked')
  await lifecycle.online('4') // must cancel the second run, not crash
  assert.equal((await second).outcome, 'cancelled')
  assert.equal(lifecycle.state, 'serving')
  assert.equal(registry.registered('orders').length, 1)
})

test('registry calls land in the order issued: a slow deregister cannot undo the next register', async () => {
  const clock = virtualClock()
  const live = new Set<string>()
  const registry: Registry = {
    async register (i) { await sleepOn(clock, 1); live.add(i.id) },
    async deregister (i) { await sleepOn(clock, 50); live.delete(i.id) }, // much slower than register
    async close () {}
  }
  const lifecycle = createLifecycle({ registry, clock, windows: { serverCacheMs: 1_000 } })
  const started = lifecycle.start(base)
  await clock.advance(1)
  await started
  lifecycle.offline('admin') // deregister in flight for 50 ms
  await clock.advance(10)
  const back = lifecycle.online('admin') // register issued after it
  await clock.advance(100)
  await back
  assert.equal(lifecycle.state, 'serving')
  assert.deepEqual([...live], [base.id], 'registered, as the last call said')
})

function sleepOn (clock: ReturnType<typeof virtualClock>, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms))
}
