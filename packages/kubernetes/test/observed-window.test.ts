import assert from 'node:assert/strict'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { after, test } from 'node:test'
import { until } from '@lameduck/test-utils'
import { observedWindow } from '@lameduck/kubernetes'
import { endpoint, fakeApi, slice } from './fake-api.ts'
import { recordingLogger } from './helpers.ts'

const closers: Array<() => unknown> = []
after(async () => { for (const c of closers.reverse()) await c() })

const terminating = { ready: false, serving: true, terminating: true }
const notReady = { ready: false, serving: false, terminating: false }

test('pending while the endpoint is ready; over from the event that shows it terminating; onChange says when', async () => {
  const api = await fakeApi()
  closers.push(() => api.close())
  api.slices = [slice('orders-a', [endpoint('10.0.0.1', undefined, 'me'), endpoint('10.0.0.2', undefined, 'other')])]
  const w = observedWindow({ kubeconfig: api.kubeconfig, pod: 'me', dataPlaneLagMs: 1_500 })
  closers.push(() => w.close())
  assert.equal(w.part, 'endpointLagMs')
  assert.equal(w.restMs, 1_500)
  let changes = 0
  w.onChange(() => { changes++ })
  await until(() => w.observer?.state === 'ready', 'ready')
  await until(() => api.watches === 1, 'the watch')
  w.begin(Date.now())
  assert.deepEqual(w.read(), { state: 'pending', detail: "pod 'me' is still ready in its EndpointSlice" })
  api.event('MODIFIED', slice('orders-a', [endpoint('10.0.0.1', undefined, 'me'), endpoint('10.0.0.2', terminating, 'other')], undefined, '11'))
  await until(() => w.observer!.stats.events === 1, 'the event')
  assert.equal(w.read().state, 'pending', 'control: another pod terminating is not the term over')
  const before = changes
  const sent = Date.now()
  api.event('MODIFIED', slice('orders-a', [endpoint('10.0.0.1', terminating, 'me')], undefined, '12'))
  await until(() => w.read().state === 'over', 'over')
  assert.ok(changes > before, 'onChange fired')
  const r = w.read()
  assert.ok(r.state === 'over' && r.at >= sent, 'at the event, never before it')
  assert.match(r.detail, /EndpointSlice 'orders-a' lists 10\.0\.0\.1 terminating/)
  // Removed after terminating: the earliest moment out of rotation stands.
  api.event('MODIFIED', slice('orders-a', [], undefined, '13'))
  await until(() => w.observer!.state === 'removed', 'removed')
  const again = w.read()
  assert.ok(again.state === 'over' && again.at === r.at)
})

test('not ready counts as out of rotation (a manual /offline under readinessWhileDraining fail); ready again is pending again', async () => {
  const api = await fakeApi()
  closers.push(() => api.close())
  api.slices = [slice('orders-a', [endpoint('10.0.0.1', undefined, 'me')])]
  const w = observedWindow({ kubeconfig: api.kubeconfig, pod: 'me' })
  closers.push(() => w.close())
  await until(() => w.observer?.state === 'ready' && api.watches === 1, 'ready, watching')
  api.event('MODIFIED', slice('orders-a', [endpoint('10.0.0.1', notReady, 'me')], undefined, '11'))
  await until(() => w.read().state === 'over', 'over (not ready)')
  api.event('MODIFIED', slice('orders-a', [endpoint('10.0.0.1', undefined, 'me')], undefined, '12'))
  await until(() => w.read().state === 'pending', 'pending again (ready)')
})

test('unavailable without RBAC (said once, the preset applies), and again when the watch works', async () => {
  const api = await fakeApi()
  closers.push(() => api.close())
  api.slices = [slice('orders-a', [endpoint('10.0.0.1', undefined, 'me')])]
  api.listStatus = 403
  const logger = recordingLogger()
  const w = observedWindow({ kubeconfig: api.kubeconfig, pod: 'me', logger, backoff: { initialMs: 10, maxMs: 20 } })
  closers.push(() => w.close())
  let changes = 0
  w.onChange(() => { changes++ })
  await until(() => w.read().state === 'unavailable', 'unavailable')
  assert.ok(changes >= 1, 'onChange fired on the failure')
  await until(() => api.requests.filter((r) => r === 'list').length >= 4, 'retries')
  for (let i = 0; i < 3; i++) assert.match((w.read() as { detail: string }).detail, /LAMEDUCK_ERR_K8S_FORBIDDEN/)
  assert.equal(logger.warnings().filter((m) => m.includes('observed window is unavailable')).length, 1, 'said once')
  api.listStatus = 0
  await until(() => w.read().state === 'pending', 'pending once the list works')
})

test('a pod no EndpointSlice lists is unavailable (POD_NAME names another pod), not over', async () => {
  const api = await fakeApi()
  closers.push(() => api.close())
  api.slices = [slice('orders-a', [endpoint('10.0.0.2', undefined, 'other')])]
  const w = observedWindow({ kubeconfig: api.kubeconfig, pod: 'me', podIP: '10.0.0.9' })
  closers.push(() => w.close())
  await until(() => w.observer!.stats.lists === 1, 'the list')
  const r = w.read()
  assert.equal(r.state, 'unavailable')
  assert.match((r as { detail: string }).detail, /lists pod 'me' or 10\.0\.0\.9/)
})

test('no API configured: unavailable with the reason, said once; bad options still throw', () => {
  const logger = recordingLogger()
  const w = observedWindow({ kubeconfig: join(tmpdir(), 'lameduck-no-such-kubeconfig.yaml'), pod: 'me', logger })
  assert.equal(w.observer, null)
  assert.equal(w.read().state, 'unavailable')
  w.read()
  assert.equal(logger.warnings().length, 1)
  assert.throws(() => observedWindow({ kubeconfig: join(tmpdir(), 'x.yaml'), dataPlaneLagMs: -1 }), { code: 'LAMEDUCK_ERR_INVALID_OPTION' })
  assert.throws(() => observedWindow({ kubeconfig: join(tmpdir(), 'x.yaml'), namespace: 'Bad_NS' } as never), { code: 'LAMEDUCK_ERR_INVALID_OPTION' })
})
