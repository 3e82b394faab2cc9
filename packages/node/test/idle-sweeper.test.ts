// The idle sweep closes only connections whose client sent nothing, never ones
// this process was merely too busy to read (a stalled event loop).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setImmediate as immediate } from 'node:timers/promises'
import { IdleSweeper, kBusy, kUsed, type Tracked } from '../src/idle-sweeper.ts'

function rig () {
  let now = 0
  const conn: Tracked = { [kBusy]: 0, [kUsed]: 0 }
  const closed: Tracked[] = []
  const sweeper = new IdleSweeper(new Set([conn]), (c) => closed.push(c), { now: () => now })
  return { conn, closed, sweeper, at (ms: number) { now = ms } }
}

test('an idle connection is closed after two on-time sweeps found it unused', async () => {
  const r = rig()
  r.sweeper.sweep() // stamps
  r.at(500); r.sweeper.sweep()
  r.at(1000); r.sweeper.sweep()
  await immediate()
  assert.deepEqual(r.closed, [r.conn])
  assert.equal(r.sweeper.closed, 1)
})

test('a sweep that runs late (the event loop stalled) counts no idle time: the request read after it keeps the connection', async () => {
  const r = rig()
  r.sweeper.sweep()
  r.at(500); r.sweeper.sweep() // idle once
  r.at(1700); r.sweeper.sweep() // 1.2 s after the last: the loop stalled; a request may be waiting unread
  await immediate()
  assert.deepEqual(r.closed, [], 'a late sweep must not close')
  assert.equal(r.sweeper.late, 1)
  r.conn[kUsed] = 1 // the poll phase then reads the request the client sent during the stall
  r.at(2200); r.sweeper.sweep()
  r.at(2700); r.sweeper.sweep()
  await immediate()
  assert.deepEqual(r.closed, [], 'used since the last on-time sweep: not idle')
})

test('a request read between the sweep and the close (same loop turn) keeps the connection', async () => {
  const r = rig()
  r.sweeper.sweep()
  r.at(500); r.sweeper.sweep()
  r.at(1000); r.sweeper.sweep() // decides to close…
  r.conn[kUsed] = 7 // …but the poll phase of this turn parses a request first
  r.conn[kBusy] = 1
  await immediate()
  assert.deepEqual(r.closed, [])
})

test('a connection the caller asks more idle sweeps for stays open until it had them all', async () => {
  let now = 0
  const conn: Tracked = { [kBusy]: 0, [kUsed]: 0 }
  const closed: Tracked[] = []
  const sweeper = new IdleSweeper(new Set([conn]), (c) => closed.push(c), { now: () => now, idleSweeps: () => 4 })
  sweeper.sweep() // stamps
  for (let i = 1; i <= 3; i++) { now = i * 500; sweeper.sweep() }
  await immediate()
  assert.deepEqual(closed, [], 'three idle sweeps of the four asked for')
  now = 2000; sweeper.sweep()
  await immediate()
  assert.deepEqual(closed, [conn])
})
