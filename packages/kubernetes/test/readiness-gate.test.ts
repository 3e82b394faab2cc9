import assert from 'node:assert/strict'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { after, test } from 'node:test'
import { until } from '@lameduck/test-utils'
import { createLifecycle, memoryRegistry, virtualClock, type Registry } from '@lameduck/core'
import { readinessGate } from '@lameduck/kubernetes'
import { fakeApi } from './fake-api.ts'
import { recordingLogger } from './helpers.ts'

const closers: Array<() => unknown> = []
after(async () => { for (const c of closers.reverse()) await c() })

const base = { id: 'orders-1', service: 'orders', host: '10.0.0.1', port: 8080 }

/** A registry whose register() waits until release(): the confirmation is the test's to give. */
function heldRegistry (): Registry & { release: () => void, registering: () => boolean } {
  const inner = memoryRegistry()
  let release = (): void => {}
  let waiting = false
  const held = new Promise<void>((resolve) => { release = resolve })
  return {
    async register (instance, call) { waiting = true; await held; await inner.register(instance, call) },
    deregister: (instance, call) => inner.deregister(instance, call),
    close: () => inner.close(),
    release: () => release(),
    registering: () => waiting
  }
}

const statuses = (api: Awaited<ReturnType<typeof fakeApi>>): string[] => api.patches.map((p) => p.body.status.conditions[0].status as string)

test('the condition turns True only once the registry confirmed the registration, and False once offline', async () => {
  const api = await fakeApi()
  closers.push(() => api.close())
  const registry = heldRegistry()
  const lifecycle = createLifecycle({ registry })
  const gate = readinessGate({ kubeconfig: api.kubeconfig, pod: 'orders-1' })
  const detach = gate.attach({ lifecycle, logger: recordingLogger() })
  closers.push(detach)
  const started = lifecycle.start(base)
  await until(() => registry.registering(), 'register() called')
  await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(api.patches.length, 0, 'control: nothing written while the registry has not confirmed')
  registry.release()
  await started
  await until(() => gate.status === true, 'the condition True')
  const patch = api.patches[0]!
  assert.equal(patch.path, '/api/v1/namespaces/shop/pods/orders-1/status')
  assert.equal(patch.contentType, 'application/strategic-merge-patch+json')
  assert.deepEqual({ ...patch.body.status.conditions[0], lastTransitionTime: undefined }, { type: 'lameduck.dev/registered', status: 'True', reason: 'Registered', message: 'registered as orders-1', lastProbeTime: null, lastTransitionTime: undefined })
  await lifecycle.offline()
  await until(() => gate.status === false, 'the condition False')
  assert.deepEqual(statuses(api), ['True', 'False'])
  assert.equal(api.patches[1]!.body.status.conditions[0].reason, 'Offline')
  await lifecycle.online()
  await until(() => gate.status === true, 'True again after online()')
})

test('warmupFraction: True only once that share of the warmup passed since the registration', async () => {
  const api = await fakeApi()
  closers.push(() => api.close())
  const clock = virtualClock()
  const lifecycle = createLifecycle({ registry: memoryRegistry(), warmupMs: 60_000, clock })
  const gate = readinessGate({ kubeconfig: api.kubeconfig, pod: 'orders-1', warmupFraction: 0.5 })
  closers.push(gate.attach({ lifecycle, logger: recordingLogger() }))
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  await clock.advance(29_999)
  await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(api.patches.length, 0, 'control: not before half the warmup')
  await clock.advance(1)
  await until(() => gate.status === true, 'True at half the warmup')
  assert.match(api.patches[0]!.body.status.conditions[0].message, /50% of the 60000 ms warmup passed/)
})

test('a drain before the warmup share passed writes nothing', async () => {
  const api = await fakeApi()
  closers.push(() => api.close())
  const clock = virtualClock()
  const lifecycle = createLifecycle({ registry: memoryRegistry(), warmupMs: 60_000, clock })
  const gate = readinessGate({ kubeconfig: api.kubeconfig, pod: 'orders-1', warmupFraction: 1 })
  closers.push(gate.attach({ lifecycle, logger: recordingLogger() }))
  const started = lifecycle.start(base)
  await clock.advance(0)
  await started
  const done = lifecycle.offline()
  await clock.advance(60_000)
  await done
  await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(api.patches.length, 0)
})

test('without the Role: one warning naming the Role, retried until it works', async () => {
  const api = await fakeApi()
  closers.push(() => api.close())
  api.patchStatus = 403
  const logger = recordingLogger()
  const lifecycle = createLifecycle({ registry: memoryRegistry() })
  const gate = readinessGate({ kubeconfig: api.kubeconfig, pod: 'orders-1', backoff: { initialMs: 10, maxMs: 20 } })
  closers.push(gate.attach({ lifecycle, logger }))
  await lifecycle.start(base)
  await until(() => api.patches.length >= 4, 'retries')
  assert.equal(logger.warnings().length, 1)
  assert.match(logger.warnings()[0]!, /pods\/status: patch/)
  assert.equal(gate.status, undefined)
  api.patchStatus = 0
  await until(() => gate.status === true, 'written once allowed')
})

test('no API configured: the gate is off with a warning; bad options throw', () => {
  const logger = recordingLogger()
  const gate = readinessGate({ kubeconfig: join(tmpdir(), 'lameduck-no-such-kubeconfig.yaml'), pod: 'orders-1' })
  assert.equal(gate.writer, null)
  gate.attach({ lifecycle: createLifecycle(), logger })
  assert.match(logger.warnings()[0]!, /readiness gate off/)
  assert.throws(() => readinessGate({ kubeconfig: join(tmpdir(), 'x.yaml'), warmupFraction: 2 }), { code: 'LAMEDUCK_ERR_INVALID_OPTION' })
})
