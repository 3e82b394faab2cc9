// Registry calls land in the order issued even when one outlives its timeout
// (issue 13.8): the next call waits for the timed-out one to settle.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createLifecycle, memoryRegistry, virtualClock, TimeoutError, type Instance, type MemoryRegistry, type Registry, type RegistryCallOptions } from '@lameduck/core'

const base = { id: '127.0.0.1:orders:3000', service: 'orders', host: '127.0.0.1', port: 3000 }

/** The memory registry behind a slow network: deregister takes `ms`, whatever the signal says (the worst adapter). */
function slowDeregister (registry: MemoryRegistry, clock: ReturnType<typeof virtualClock>, ms: number, seen: RegistryCallOptions[]): Registry {
  return {
    register: (i: Instance, o?: RegistryCallOptions) => { seen.push(o ?? {}); return registry.register(i) },
    async deregister (i: Instance, o?: RegistryCallOptions) {
      seen.push(o ?? {})
      await new Promise<void>((resolve) => clock.setTimeout(resolve, ms))
      await registry.deregister(i)
    },
    close: () => registry.close()
  }
}

async function serving (registry: Registry, clock: ReturnType<typeof virtualClock>) {
  const lifecycle = createLifecycle({ registry, clock, windows: { serverCacheMs: 30_000 }, registryTimeoutMs: 10_000, registryBackoff: { initialMs: 500, maxMs: 500, jitter: 0 } })
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  return lifecycle
}

test('memory registry: a deregister slower than registryTimeoutMs, then online(): ends registered', async () => {
  const clock = virtualClock()
  const memory = memoryRegistry({ clock })
  const seen: RegistryCallOptions[] = []
  const lifecycle = await serving(slowDeregister(memory, clock, 15_000, seen), clock)
  lifecycle.offline('admin').catch(() => {})
  await clock.advance(11_000) // the deregister timed out at 10 s and is still running
  const deregisterSignal = seen[1]!.signal!
  assert.equal(deregisterSignal.aborted, true, 'the timed-out call was told through its signal')
  assert.ok(deregisterSignal.reason instanceof TimeoutError)
  const back = lifecycle.online('admin')
  await clock.advance(10_000) // the slow DELETE lands at 15 s; the register must come after it
  await back
  assert.equal(lifecycle.state, 'serving')
  assert.deepEqual(memory.registered('orders').map((i) => i.id), [base.id], 'registered, as the last call said')
  assert.ok(seen.every((o) => o.signal instanceof AbortSignal), 'every call gets a signal')
})

test('an adapter that honours the signal settles at the timeout and the next call runs at once', async () => {
  const clock = virtualClock()
  const memory = memoryRegistry({ clock })
  let registeredAt: number | null = null
  const registry: Registry = {
    async register (i) { registeredAt = clock.now(); await memory.register(i) },
    deregister: (_i, o) => new Promise((resolve, reject) => { o?.signal?.addEventListener('abort', () => reject(o.signal!.reason), { once: true }) }),
    close: () => memory.close()
  }
  const lifecycle = await serving(registry, clock)
  const t0 = clock.now()
  lifecycle.offline('admin').catch(() => {})
  await clock.advance(5_000)
  const back = lifecycle.online('admin') // queued behind the hung deregister
  await clock.advance(5_000)
  await back
  assert.equal(registeredAt! - t0, 10_000, 'ran as soon as the aborted call settled')
  assert.equal(lifecycle.state, 'serving')
})

test('an adapter that ignores the signal and never settles delays the queue by one more timeout, never jams it', async () => {
  const clock = virtualClock()
  const memory = memoryRegistry({ clock })
  const registry: Registry = { register: (i) => memory.register(i), deregister: () => new Promise(() => {}), close: () => memory.close() }
  const lifecycle = await serving(registry, clock)
  const problems: string[] = []
  lifecycle.on('problem', (p) => problems.push(p.message))
  lifecycle.offline('admin').catch(() => {})
  await clock.advance(1_000)
  const back = lifecycle.online('admin')
  await clock.advance(19_000)
  await back
  assert.equal(lifecycle.state, 'serving')
  assert.ok(problems.some((m) => /still running 10000 ms after its signal was aborted/.test(m)), problems.join('\n'))
})
