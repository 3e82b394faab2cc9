import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Latch } from '@lameduck/core'

test('Latch: waits resolve when it opens (once), at once after; an aborted wait rejects with the reason and is forgotten', async () => {
  const latch = new Latch()
  const order: string[] = []
  const first = latch.wait().then(() => order.push('first'))
  const ac = new AbortController()
  const aborted = latch.wait(ac.signal).then(() => 'resolved', (err: unknown) => err)
  ac.abort(new Error('gave up'))
  assert.equal(((await aborted) as Error).message, 'gave up')
  assert.equal(latch.isOpen, false)
  latch.open()
  latch.open()
  await first
  assert.deepEqual(order, ['first'], 'released once')
  await latch.wait()
  const already = new AbortController()
  already.abort(new Error('late'))
  await latch.wait(already.signal) // open: resolves whatever the signal says
  const closed = new Latch()
  await assert.rejects(closed.wait(already.signal), /late/)
})
