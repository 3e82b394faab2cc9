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

/** A lifecycle with earlyOffline on a virtual clock, serving; the caller starts the drain. */
async function serving (windowMs: number, maxConsumers?: number) {
  const clock = virtualClock()
  const inflight = new InFlightTracker()
  const tracker = new ConsumerTracker({ windowMs, quietMs: 1_000, inflight, clock, ...(maxConsumers === undefined ? {} : { maxConsumers }) })
  const lifecycle = createLifecycle({ clock, inflight, earlyOffline: tracker, windows: { clientFetchMs: windowMs } })
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  return { clock, tracker, lifecycle }
}

test('10,001 spoofed consumer ids cannot evict a consumer that was not told: the 60 s window runs in full, and /status says why', async () => {
  const { clock, tracker, lifecycle } = await serving(60_000)
  tracker.seen('real-consumer')
  await clock.advance(100)
  const done = lifecycle.offline()
  await clock.advance(0)
  // Any client can send x-lameduck-consumer; each spoofed id gets (and is told) a draining response.
  for (let i = 0; i <= 10_000; i++) { tracker.seen(`spoofed-${i}`); tracker.told(`spoofed-${i}`) }
  await clock.advance(3_700)
  assert.equal(lifecycle.state, 'draining', 'not ended after 3.7 s (the attack)')
  const status = tracker.describe()
  assert.match(status.pending!, /more than 10000 consumer ids within the window \(the last not tracked 3700 ms ago\): keeping the full window/)
  assert.equal(status.consumersInWindow - status.consumersTold, 1, 'the real consumer is still remembered, untold')
  assert.equal(status.maxConsumers, 10_000)
  assert.equal(status.overflowedMsAgo, 3_700)
  await clock.advance(60_000 - 3_700)
  const report = await done
  assert.equal(report.endedEarly, false)
  assert.equal(report.totalMs, 60_000)
})

test('a full tracker: told or not, an id seen within the window is never dropped; ids older than the window make room', async () => {
  const { clock, tracker } = await serving(10_000, 3)
  tracker.seen('a'); tracker.seen('b'); tracker.seen('c')
  tracker.begin(clock.now())
  tracker.told('a'); tracker.told('b')
  tracker.seen('d') // full of ids within the window: d is not tracked, and that counts
  assert.match(tracker.pending(clock.now())!, /more than 3 consumer ids/)
  assert.match(JSON.stringify(tracker.describe()), /"consumersInWindow":3,"consumersTold":2/)
  await clock.advance(5_000)
  tracker.seen('a') // a stays in the window
  await clock.advance(5_001)
  tracker.seen('e') // b and c are older than the window now: one of them makes room
  tracker.seen('f')
  assert.equal(tracker.describe().consumersInWindow, 3, 'a, e, f')
  tracker.told('e'); tracker.told('f')
  assert.equal(tracker.describe().overflowedMsAgo, null, 'the overflow is more than a window ago')
  await clock.advance(10_000)
  tracker.seen('g') // a is older than the window too by now
  assert.match(tracker.pending(clock.now())!, /consumer g has not received a draining response/)
})

test('ids a balancer never sends (too long, control characters) count as requests without an id', async () => {
  const { clock, tracker } = await serving(10_000)
  tracker.begin(clock.now())
  tracker.seen('x'.repeat(201))
  assert.match(tracker.pending(clock.now())!, /without x-lameduck-consumer/)
  await clock.advance(10_001)
  tracker.seen('bad\u0000id')
  assert.match(tracker.pending(clock.now())!, /without x-lameduck-consumer/)
  assert.equal(tracker.describe().consumersInWindow, 0)
})

test('a caller\'s own stamp counts instead of the clock: a stamp later than the request keeps the window longer, never shorter', () => {
  const clock = virtualClock()
  const tracker = new ConsumerTracker({ windowMs: 1_000, quietMs: 100, inflight: new InFlightTracker(), clock })
  tracker.begin(clock.now())
  tracker.seen('c1', clock.now() + 10) // an HTTP server's coarse stamp, rounded up
  tracker.told('c1', clock.now() + 10)
  assert.equal(tracker.describe().consumersTold, 1)
  tracker.seen(undefined, clock.now() + 10)
  assert.match(tracker.pending(clock.now())!, /without x-lameduck-consumer arrived 0 ms ago/, 'a stamp ahead of the clock reads as 0 ms, not negative')
  assert.match(tracker.pending(clock.now() + 1_010)!, /without x-lameduck-consumer arrived 1000 ms ago/, 'the window counts from the stamp')
  assert.equal(tracker.pending(clock.now() + 1_011), null)
})
