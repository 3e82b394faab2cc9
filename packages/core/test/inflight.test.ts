import { test } from 'node:test'
import assert from 'node:assert/strict'
import { InFlightTracker } from '@lameduck/core'

test('InFlightTracker: ends a transport settles lazily are counted before every read of the count and before idle()', async () => {
  const inflight = new InFlightTracker()
  let done = 0 // requests that ended without telling the tracker yet
  inflight.settleWith(() => { for (; done > 0; done--) inflight.end() })
  inflight.start(); inflight.start(); inflight.start()
  done = 2
  assert.equal(inflight.count, 1, 'the two ended requests settled as the count is read')
  assert.equal(inflight.total, 3)
  let idle = false
  const waiting = inflight.idle().then(() => { idle = true })
  await Promise.resolve()
  assert.equal(idle, false, 'one still in flight')
  done = 1
  await Promise.resolve()
  assert.equal(idle, false, 'a lazy end is not seen until something settles')
  assert.equal(inflight.count, 0)
  await waiting
  done = 0
  inflight.start()
  done = 1
  await inflight.idle() // settled first: resolves at once
})
