// offline()/online() before start() (issue 13.5): a typed error at once, never a
// retry loop, and the lifecycle can still start afterwards.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createLifecycle, memoryRegistry, virtualClock, InvalidOptionError, NotStartedError, type Registry } from '@lameduck/core'

const base = { id: '127.0.0.1:orders:3000', service: 'orders', host: '127.0.0.1', port: 3000 }

test('offline() then online() before start(): NotStartedError, no retry loop, and start() still works', async () => {
  const clock = virtualClock()
  const registry = memoryRegistry({ clock })
  const lifecycle = createLifecycle({ registry, clock })
  const problems: string[] = []
  lifecycle.on('problem', (p) => problems.push(p.message))
  const isNotStarted = (op: string) => (err: unknown): boolean => {
    assert.ok(err instanceof NotStartedError)
    assert.equal(err.code, 'LAMEDUCK_ERR_NOT_STARTED')
    assert.equal(err.operation, op)
    assert.match(err.message, /not listening yet/)
    return true
  }
  await assert.rejects(lifecycle.offline('admin /offline'), isNotStarted('offline'))
  await assert.rejects(lifecycle.online('admin /online'), isNotStarted('online'))
  assert.equal(lifecycle.state, 'starting')
  await clock.advance(60_000)
  assert.equal(clock.pending, 0, 'nothing scheduled: no retry loop')
  assert.deepEqual(problems, [])
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  assert.equal(lifecycle.state, 'serving')
  assert.equal(registry.registered('orders').length, 1)
})

test('a registry that refuses the instance as invalid: startup fails at once instead of retrying forever', async () => {
  const clock = virtualClock()
  let calls = 0
  const registry: Registry = {
    async register () { calls++; throw new InvalidOptionError('instance.host', 'must be the advertised IP') },
    async deregister () {},
    async close () {}
  }
  const lifecycle = createLifecycle({ registry, clock })
  const failed = assert.rejects(lifecycle.start(base), InvalidOptionError)
  await clock.advance(0)
  await failed
  assert.equal(calls, 1)
  assert.equal(clock.pending, 0)
})
