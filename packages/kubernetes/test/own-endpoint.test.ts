import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { until } from '@lameduck/test-utils'
import { ownEndpointObserver, type OwnEndpointChange } from '@lameduck/kubernetes'
import { endpoint, fakeApi, slice } from './fake-api.ts'

const closers: Array<() => unknown> = []
after(async () => { for (const c of closers.reverse()) await c() })

const terminating = { ready: false, serving: true, terminating: true }

test("'leaving' fires when the own pod's endpoint turns terminating, not for another pod's", async () => {
  const api = await fakeApi()
  closers.push(() => api.close())
  api.slices = [slice('orders-a', [endpoint('10.0.0.1', undefined, 'me'), endpoint('10.0.0.2', undefined, 'other')])]
  const o = ownEndpointObserver({ kubeconfig: api.kubeconfig, pod: 'me' })
  closers.push(() => o.close())
  const changes: OwnEndpointChange[] = []
  const leaving: OwnEndpointChange[] = []
  o.on('change', (c) => changes.push(c))
  o.on('leaving', (c) => leaving.push(c))
  await until(() => o.state === 'ready', 'ready')
  await until(() => api.watches === 1, 'the watch')
  api.event('MODIFIED', slice('orders-a', [endpoint('10.0.0.1', undefined, 'me'), endpoint('10.0.0.2', terminating, 'other')], undefined, '11'))
  await until(() => o.stats.events === 1, 'the event')
  assert.equal(leaving.length, 0, 'control: another pod terminating is not us')
  api.event('MODIFIED', slice('orders-a', [endpoint('10.0.0.1', terminating, 'me')], undefined, '12'))
  await until(() => leaving.length === 1, 'leaving')
  assert.equal(leaving[0]!.state, 'terminating')
  assert.match(leaving[0]!.evidence, /EndpointSlice 'orders-a' lists 10.0.0.1 terminating/)
  api.event('MODIFIED', slice('orders-a', [], undefined, '13'))
  await until(() => o.state === 'removed', 'removed')
  assert.equal(leaving.length, 1, 'once')
  assert.deepEqual(changes.map((c) => c.state), ['ready', 'terminating', 'removed'])
})

test("without RBAC: 'unavailable' once, whatever the retries", async () => {
  const api = await fakeApi()
  closers.push(() => api.close())
  api.listStatus = 403
  const o = ownEndpointObserver({ kubeconfig: api.kubeconfig, pod: 'me', backoff: { initialMs: 10, maxMs: 20 } })
  closers.push(() => o.close())
  const errors: Error[] = []
  o.on('unavailable', (err) => errors.push(err))
  await until(() => api.requests.filter((r) => r === 'list').length >= 4, 'retries')
  assert.equal(errors.length, 1)
  assert.equal((errors[0] as Error & { code: string }).code, 'LAMEDUCK_ERR_K8S_FORBIDDEN')
  assert.equal(o.state, 'unknown')
})
