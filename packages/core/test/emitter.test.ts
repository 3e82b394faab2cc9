import { test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Emitter, Lifecycle, memoryRegistry } from '@lameduck/core'

type Events = { tick: [number], done: [] }

test('Emitter: listeners run in order with the arguments; twice added runs twice; emit says whether any ran', () => {
  const e = new Emitter<Events>()
  const seen: string[] = []
  const a = (n: number): void => { seen.push(`a${n}`) }
  assert.equal(e.emit('tick', 0), false)
  e.on('tick', a).on('tick', (n) => { seen.push(`b${n}`) }).on('tick', a)
  assert.equal(e.emit('tick', 1), true)
  assert.deepEqual(seen, ['a1', 'b1', 'a1'])
  assert.equal(e.listenerCount('tick'), 3)
  assert.equal(e.listenerCount('done'), 0)
})

test('Emitter: off() removes the most recently added instance only; once() runs once and off() finds it by its listener', () => {
  const e = new Emitter<Events>()
  const seen: number[] = []
  const a = (n: number): void => { seen.push(n) }
  e.on('tick', a).on('tick', a).off('tick', a)
  e.emit('tick', 1)
  assert.deepEqual(seen, [1])
  e.off('tick', a).off('tick', a)
  e.emit('tick', 2)
  assert.deepEqual(seen, [1], 'removing a listener that is not there is a no-op')

  const b = (n: number): void => { seen.push(n * 10) }
  e.once('tick', b)
  assert.deepEqual(e.listeners('tick'), [b], 'listeners() gives what once() was given')
  e.emit('tick', 3)
  e.emit('tick', 4)
  assert.deepEqual(seen, [1, 30])
  e.once('tick', b).removeListener('tick', b)
  e.emit('tick', 5)
  assert.deepEqual(seen, [1, 30])
})

test('Emitter: an emit runs the listeners there when it began; one that throws throws from emit()', () => {
  const e = new Emitter<Events>()
  const seen: string[] = []
  const late = (): void => { seen.push('late') }
  const second = (): void => { seen.push('second') }
  e.on('done', () => { seen.push('first'); e.off('done', second); e.on('done', late) })
  e.on('done', second)
  e.emit('done')
  assert.deepEqual(seen, ['first', 'second'])
  e.removeAllListeners('done')
  assert.equal(e.emit('done'), false)
  e.on('done', () => { throw new Error('boom') })
  assert.throws(() => e.emit('done'), /boom/)
  e.on('tick', () => {}).removeAllListeners()
  assert.equal(e.listenerCount('tick') + e.listenerCount('done'), 0)
})

test('Lifecycle: node:events once() waits for its events, as on an EventEmitter', async () => {
  const lifecycle = new Lifecycle({ registry: memoryRegistry(), windows: 'none' })
  const state = once(lifecycle as unknown as NodeJS.EventEmitter, 'state')
  await lifecycle.start({ id: '127.0.0.1:emitter:3000', service: 'emitter', host: '127.0.0.1', port: 3000 })
  const [change] = await state as [{ from: string, to: string }]
  assert.equal(change.from, 'starting')
  assert.equal(lifecycle.listenerCount('state'), 0, 'once() took its listener off')
  await lifecycle.shutdown()
})
