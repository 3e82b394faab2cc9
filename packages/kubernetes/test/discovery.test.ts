import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { until } from '@lameduck/test-utils'
import { kubernetesDiscovery } from '@lameduck/kubernetes'
import { endpoint, fakeApi, slice } from './fake-api.ts'
import { recordingLogger } from './helpers.ts'

const closers: Array<() => unknown> = []
after(async () => { for (const c of closers.reverse()) await c() })

async function setup (options: Record<string, unknown> = {}) {
  const api = await fakeApi()
  closers.push(() => api.close())
  const logger = recordingLogger()
  const start = (): ReturnType<typeof kubernetesDiscovery> => {
    const d = kubernetesDiscovery({ kubeconfig: api.kubeconfig, service: 'orders', logger, backoff: { initialMs: 20, maxMs: 100 }, ...options })
    closers.push(() => d.close())
    return d
  }
  return { api, logger, start }
}

const hosts = (d: ReturnType<typeof kubernetesDiscovery>): string[] => d.instances('orders').map((i) => `${i.host}:${i.port}`)

test('lists the ready endpoints, then drops one at the watch event that marks it terminating, and ramps a newcomer', async () => {
  const { api, start } = await setup({ warmupMs: 60_000 })
  api.slices = [slice('orders-a', [endpoint('10.0.0.1', undefined, 'p1'), endpoint('10.0.0.2', undefined, 'p2'), endpoint('10.0.0.3', { ready: false, serving: false, terminating: false }, 'p3')])]
  const d = start()
  await d.ready()
  assert.equal(d.namespace, 'shop', 'the kubeconfig context namespace')
  assert.deepEqual(hosts(d), ['10.0.0.1:8080', '10.0.0.2:8080'])
  const first = d.instances('orders')[0]!
  assert.equal(first.id, 'p1:8080')
  assert.equal(first.metadata['lameduck.registeredAt'], undefined, 'ready before we looked: warm')
  assert.equal(first.metadata['kubernetes.pod'], 'p1')
  const changes: string[][] = []
  d.subscribe('orders', (list) => changes.push(list.map((i) => i.host)))
  await until(() => api.watches === 1, 'the watch')
  api.event('MODIFIED', slice('orders-a', [endpoint('10.0.0.1', { ready: false, serving: true, terminating: true }, 'p1'), endpoint('10.0.0.2', undefined, 'p2'), endpoint('10.0.0.3', undefined, 'p3')], undefined, '11'))
  await until(() => changes.length === 1, 'one change')
  assert.deepEqual(changes[0], ['10.0.0.2', '10.0.0.3'])
  const newcomer = d.instances('orders').find((i) => i.host === '10.0.0.3')!
  assert.ok(Number(newcomer.metadata['lameduck.registeredAt']) > 0, 'first seen ready now: ramps')
  assert.equal(newcomer.metadata['lameduck.warmup'], '60000')
  api.event('DELETED', slice('orders-a', [], undefined, '12'))
  await until(() => changes.length === 2, 'the delete')
  assert.deepEqual(changes[1], [])
  assert.equal(d.describe().services[0]!.resourceVersion, '12')
})

test('a line that is not JSON cuts the watch with a warning; the list stays and the next watch goes on from the last resourceVersion', async () => {
  const { api, logger, start } = await setup()
  api.slices = [slice('orders-a', [endpoint('10.0.0.1')])]
  const d = start()
  await d.ready()
  await until(() => api.watches === 1, 'the watch')
  api.event('BOOKMARK', { kind: 'EndpointSlice', metadata: { resourceVersion: '42' } })
  api.send('<html>502 Bad Gateway</html>\n')
  await until(() => api.requests.includes('watch rv=42'), 'a new watch from the bookmark')
  assert.deepEqual(hosts(d), ['10.0.0.1:8080'])
  assert.ok(logger.warnings().some((w) => w.includes('not JSON')), logger.warnings().join('\n'))
  assert.equal(d.describe().services[0]!.lists, 1, 'no relist needed')
})

test('a line that never ends costs at most maxEventBytes: the watch is cut and the list kept', async () => {
  const { api, logger, start } = await setup({ maxEventBytes: 64 * 1024 })
  api.slices = [slice('orders-a', [endpoint('10.0.0.1')])]
  const d = start()
  await d.ready()
  await until(() => api.watches === 1, 'the watch')
  const chunk = 'x'.repeat(16 * 1024)
  for (let i = 0; i < 8; i++) api.send(chunk)
  await until(() => logger.warnings().some((w) => w.includes('longer than 65536 bytes')), 'the bound')
  await until(() => api.requests.filter((r) => r.startsWith('watch')).length >= 2, 'a new watch')
  assert.deepEqual(hosts(d), ['10.0.0.1:8080'])
})

test('a 410 Gone ERROR event relists at once', async () => {
  const { api, start } = await setup()
  api.slices = [slice('orders-a', [endpoint('10.0.0.1')])]
  const d = start()
  await d.ready()
  await until(() => api.watches === 1, 'the watch')
  api.slices = [slice('orders-a', [endpoint('10.0.0.9')])]
  api.event('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 10 (20)' })
  await until(() => hosts(d)[0] === '10.0.0.9:8080', 'the relisted endpoint')
  assert.equal(api.requests.filter((r) => r === 'list').length, 2)
  assert.equal(d.describe().services[0]!.gone, 1)
})

test('RBAC denial: one warning with the code, the last good list kept, recovery said once', async () => {
  const { api, logger, start } = await setup()
  api.slices = [slice('orders-a', [endpoint('10.0.0.1')])]
  const d = start()
  await d.ready()
  await until(() => api.watches === 1, 'the watch')
  api.watchStatus = 403
  api.endWatches()
  await until(() => api.requests.filter((r) => r.startsWith('watch')).length >= 4, 'several denied watches')
  const denied = logger.lines.filter((l) => l.level === 'warn' && l.obj.code === 'LAMEDUCK_ERR_K8S_FORBIDDEN')
  assert.equal(denied.length, 1, 'once, not once per retry')
  assert.match(denied[0]!.msg, /keeping the last list \(1 instance\)/)
  assert.equal(d.describe().services[0]!.lastError?.code, 'LAMEDUCK_ERR_K8S_FORBIDDEN')
  assert.deepEqual(hosts(d), ['10.0.0.1:8080'])
  api.watchStatus = 0
  await until(() => d.describe().services[0]!.lastError === null, 'recovery')
  assert.ok(logger.lines.some((l) => l.level === 'info' && l.msg.includes('works again')))
})

test('a Service that does not exist: a warning, an empty list, and it keeps watching', async () => {
  const { api, logger, start } = await setup()
  api.serviceExists = false
  const d = start()
  await d.ready()
  await until(() => logger.lines.some((l) => l.obj.code === 'LAMEDUCK_ERR_K8S_NOT_FOUND'), 'the warning')
  assert.match(logger.warnings().join('\n'), /Service 'orders' in namespace 'shop' does not exist/)
  assert.deepEqual(hosts(d), [])
  await until(() => api.watches === 1, 'still watching')
  api.event('ADDED', slice('orders-a', [endpoint('10.0.0.5')], undefined, '11'))
  await until(() => hosts(d).length === 1, 'the Service appears')
})

test('an EndpointSlice with 10,000 endpoints; maxEndpoints bounds what is kept', async () => {
  const { api, logger, start } = await setup({ maxEndpoints: 5_000 })
  const many = Array.from({ length: 10_000 }, (_, i) => endpoint(`10.1.${Math.floor(i / 250)}.${i % 250}`, undefined, `p${i}`))
  api.slices = [slice('orders-a', many)]
  const d = start()
  await d.ready()
  assert.equal(d.instances('orders').length, 5_000)
  assert.ok(logger.warnings().some((w) => w.includes('only the first 5000')), logger.warnings().join('\n'))
  // The bound is for all slices together: a stream of many slices cannot grow past it either.
  await until(() => api.watches === 1, 'the watch')
  for (let s = 0; s < 5; s++) api.event('ADDED', slice(`orders-more-${s}`, many.slice(0, 2_000), undefined, String(20 + s)))
  await until(() => d.describe().services[0]!.slices === 6, 'the added slices')
  assert.equal(d.describe().services[0]!.endpoints, 5_000)
  const { api: api2, start: start2 } = await setup()
  api2.slices = [slice('orders-a', many)]
  const all = start2()
  await all.ready()
  assert.equal(all.instances('orders').length, 10_000)
})

test('missing and odd fields: skipped with a warning each, the rest used', async () => {
  const { api, logger, start } = await setup()
  api.slices = [
    slice('orders-a', [endpoint('10.0.0.1'), { conditions: { ready: true } }, endpoint('10.0.0.2', { ready: 'yes' }), endpoint('10.0.0.3', { ready: true, terminating: 'maybe' }), null, endpoint('10.0.0.4', {})]),
    { kind: 'EndpointSlice', metadata: {} },
    slice('orders-b', 'not a list'),
    slice('orders-c', [endpoint('10.0.0.7')], [{ name: 'http', port: 'eighty' }])
  ]
  const d = start()
  await d.ready()
  assert.deepEqual(hosts(d), ['10.0.0.1:8080', '10.0.0.4:8080'], 'unset ready means ready; odd ones are not')
  const w = logger.warnings().join('\n')
  for (const part of ['without an address', 'not true or false', 'without metadata.name', 'endpoints is not a list', "port 'http' has no valid number"]) assert.ok(w.includes(part), `${part} in\n${w}`)
})

test('named ports, a port number for a headless Service without ports, and several ports without the option', async () => {
  const two = [{ name: 'http', port: 8080 }, { name: 'grpc', port: 9090 }]
  const { api, start } = await setup({ port: 'grpc' })
  api.slices = [slice('orders-a', [endpoint('10.0.0.1')], two)]
  assert.deepEqual(hosts(await ready(start())), ['10.0.0.1:9090'])
  const h = await setup({ port: 7000 })
  h.api.slices = [slice('orders-a', [endpoint('10.0.0.1')], null)]
  assert.deepEqual(hosts(await ready(h.start())), ['10.0.0.1:7000'])
  const none = await setup()
  none.api.slices = [slice('orders-a', [endpoint('10.0.0.1')], two)]
  assert.deepEqual(hosts(await ready(none.start())), [])
  assert.ok(none.logger.warnings().some((w) => w.includes("2 ports ('http', 'grpc'): set the port option")))
})

async function ready (d: ReturnType<typeof kubernetesDiscovery>): Promise<ReturnType<typeof kubernetesDiscovery>> {
  await d.ready()
  return d
}

test('a watch that hangs is cut after its timeoutSeconds and the grace, and watched again', async () => {
  const { api, logger, start } = await setup({ watchTimeoutMs: 1_000, watchGraceMs: 200 })
  api.slices = [slice('orders-a', [endpoint('10.0.0.1')])]
  const d = start()
  await d.ready()
  await until(() => api.requests.filter((r) => r.startsWith('watch')).length >= 2, 'a second watch after the hung one was cut', { timeoutMs: 20_000 })
  assert.ok(logger.warnings().some((w) => w.includes('cut as hung')), logger.warnings().join('\n'))
  assert.deepEqual(hosts(d), ['10.0.0.1:8080'])
})

test('options are checked at the edge', () => {
  assert.throws(() => kubernetesDiscovery({ kubeconfig: '/nonexistent/kubeconfig' }), { code: 'LAMEDUCK_ERR_K8S_CONFIG' })
  assert.throws(() => kubernetesDiscovery({ inCluster: true }), /KUBERNETES_SERVICE_HOST/)
})
