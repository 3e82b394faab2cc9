import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConsumerTracker, InFlightTracker, createLifecycle, virtualClock } from '@lameduck/core'

const base = { id: 'a', service: 'orders', host: '127.0.0.1', port: 1 }

test('the window ends early once every aware consumer was told, after the quiet period', async () => {
  const clock = virtualClock()
  const inflight = new InFlightTracker()
  const tracker = new ConsumerTracker({ windowMs: 30_000, quietMs: 1_000, inflight, clock })
  const lifecycle = createLifecycle({ clock, inflight, earlyOffline: tracker, windows: { clientFetchMs: 30_000 } })
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  tracker.seen('c1'); tracker.seen('c2')
  await clock.advance(100)
  const done = lifecycle.offline()
  await clock.advance(0)
  assert.match(tracker.pending(clock.now())!, /consumer c1 has not received a draining response/)
  tracker.seen('c1'); tracker.told('c1')
  await clock.advance(100)
  assert.match(tracker.pending(clock.now())!, /consumer c2/)
  tracker.seen('c2'); tracker.told('c2')
  await clock.advance(500)
  assert.match(tracker.pending(clock.now())!, /quiet period/)
  inflight.start()
  await clock.advance(1_000)
  assert.match(tracker.pending(clock.now())!, /1 request\(s\) in flight/)
  inflight.end()
  await clock.advance(300)
  const report = await done
  assert.equal(report.endedEarly, true)
  assert.ok(report.totalMs < 2_500, `ended ~1 s after the last request (${report.totalMs} ms)`)
  assert.equal(lifecycle.state, 'offline')
})

test('one request without a consumer id keeps the full window', async () => {
  const clock = virtualClock()
  const inflight = new InFlightTracker()
  const tracker = new ConsumerTracker({ windowMs: 30_000, quietMs: 1_000, inflight, clock })
  const lifecycle = createLifecycle({ clock, inflight, earlyOffline: tracker, windows: { clientFetchMs: 30_000 } })
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  tracker.seen('c1')
  tracker.seen(undefined) // a plain client
  const done = lifecycle.offline()
  tracker.told('c1')
  await clock.advance(29_999)
  assert.equal(lifecycle.state, 'draining')
  assert.match(tracker.pending(clock.now())!, /without x-lameduck-consumer/)
  await clock.advance(1)
  const report = await done
  assert.equal(report.endedEarly, false)
  assert.equal(report.totalMs, 30_000)
})
