// Observers: collaborators on the lifecycle's events, validated at the edge,
// detached in reverse order, and never able to lose the drain by throwing.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { attachObservers, createLifecycle, InvalidOptionError, observers, silentLogger, type LifecycleObserver, type Logger } from '@lameduck/core'

test('observers(): an array of { name, attach }, names unique, with errors that say what to pass', () => {
  assert.deepEqual(observers('observers', undefined), [])
  assert.throws(() => observers('observers', {}), (e: InvalidOptionError) => e.code === 'LAMEDUCK_ERR_INVALID_OPTION' && /must be an array of observers/.test(e.message))
  assert.throws(() => observers('observers', [{ name: 'x' }]), /observers\[0\].*attach\(\)/)
  assert.throws(() => observers('observers', [{ attach () {} }]), /observers\[0\]\.name.*non-empty string/)
  const a = { name: 'a', attach () {} }
  assert.throws(() => observers('observers', [a, { ...a }]), /a second observer named 'a'/)
  assert.equal(observers('observers', [a]).length, 1)
})

test('attach once with the lifecycle; detach awaited in reverse order; a throwing observer is logged, the others still run', async () => {
  const lifecycle = createLifecycle({})
  const calls: string[] = []
  const errors: string[] = []
  const logger: Logger = { ...silentLogger, error: (_o: unknown, msg?: string) => { errors.push(String(msg)) }, warn: (_o: unknown, msg?: string) => { errors.push(String(msg)) } }
  const make = (name: string): LifecycleObserver => ({
    name,
    attach (ctx) {
      assert.equal(ctx.lifecycle, lifecycle)
      calls.push(`attach ${name}`)
      return async () => { await Promise.resolve(); calls.push(`detach ${name}`) }
    }
  })
  const broken: LifecycleObserver = { name: 'broken', attach () { throw new Error('boom') } }
  const failsLate: LifecycleObserver = { name: 'late', attach () { return () => { throw new Error('flush failed') } } }
  const detach = attachObservers([make('a'), broken, failsLate, make('b')], { lifecycle, logger })
  assert.deepEqual(calls, ['attach a', 'attach b'])
  await detach()
  assert.deepEqual(calls, ['attach a', 'attach b', 'detach b', 'detach a'])
  assert.deepEqual(errors, ["lameduck: observer 'broken' failed to attach: boom", "lameduck: observer 'late' failed to detach: flush failed"])
  await detach() // once only
  assert.equal(calls.length, 4)
})
