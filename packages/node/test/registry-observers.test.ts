// A registry's own observers (an adapter's weight ramp) are attached to the
// engine's lifecycle beside the user's, once even when the user passes one too.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { memoryRegistry, type Lifecycle, type LifecycleObserver, type Registry } from '@lameduck/core'
import { attach } from '@lameduck/node'
import { startServer, stop, until } from './helpers.ts'

function recording (name: string, into: Array<{ name: string, lifecycle: Lifecycle }>): LifecycleObserver {
  return { name, attach ({ lifecycle }) { into.push({ name, lifecycle }) } }
}

test('registry.observers are attached to the engine\'s lifecycle, after the user\'s, each once', async (t) => {
  const attached: Array<{ name: string, lifecycle: Lifecycle }> = []
  const ramp = recording('weight ramp', attached)
  const registry: Registry = Object.assign(memoryRegistry(), { observers: [ramp] })
  const s = await startServer({ registry, observers: [recording('mine', attached), ramp] })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  assert.deepEqual(attached.map((a) => a.name), ['mine', 'weight ramp'])
  const s2 = await startServer({ registry: Object.assign(memoryRegistry(), { observers: [recording('ramp-2', attached)] }) })
  t.after(() => stop(s2))
  assert.deepEqual(attached.map((a) => a.name), ['mine', 'weight ramp', 'ramp-2'])
  assert.notEqual(attached[2]!.lifecycle, attached[0]!.lifecycle)
})

test('registry.observers: a bad one is refused at attach() with the option named', async () => {
  const registry = Object.assign(memoryRegistry(), { observers: [{ name: 'x' }] as never })
  await assert.rejects(attach(createServer(), { service: 'x', signals: false, admin: false, registry }), /^InvalidOptionError: registry\.observers\[0\]: must be a lifecycle observer/)
})
