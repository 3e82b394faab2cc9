// kubernetesDiscovery() against a real kube-apiserver and kube-controller-manager v1.34.4: pods
// are made and deleted through the API (Ready written into their status, as the kubelet would),
// the real EndpointSlice controller publishes them, and the tests read the discovery's list.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { until } from '@lameduck/test-utils'
import { createBalancer } from '@lameduck/balancer'
import { kubernetesDiscovery, ownEndpointObserver, podConditionWriter, type KubernetesDiscovery, type OwnEndpointChange } from '@lameduck/kubernetes'
import { skipReason, startControlPlane, type ControlPlane } from './helpers/control-plane.ts'
import { faultProxy, type FaultProxy } from './helpers/fault-proxy.ts'
import { bindReader, createNamespace, createReadyPod, createService, deletePod, grantReader, NODE, setPodReady, sliceEndpoints, unbindReader } from './helpers/objects.ts'

const reason = skipReason()
const hosts = (d: KubernetesDiscovery, service = 'orders'): string[] => d.instances(service).map((i) => i.host).sort()
const lastError = (d: KubernetesDiscovery): string | undefined => d.describe().services[0]?.lastError?.code

interface Logged { level: string, code?: unknown, msg: string }
function logger (): { lines: Logged[], debug: (o: object, m?: string) => void, info: (o: object, m?: string) => void, warn: (o: object, m?: string) => void, error: (o: object, m?: string) => void } {
  const lines: Logged[] = []
  const at = (level: string) => (o: object, msg = ''): void => { lines.push({ level, code: (o as { code?: unknown }).code, msg }) }
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

describe('kubernetesDiscovery on a real API server', { skip: reason ?? false }, () => {
  let cp: ControlPlane
  const closers: Array<() => unknown> = []
  const discovery = (ns: string, options: Record<string, unknown> = {}, server?: string, user: 'admin' | 'reader' | 'nobody' = 'admin'): KubernetesDiscovery => {
    const d = kubernetesDiscovery({ kubeconfig: cp.kubeconfig(user, server), namespace: ns, service: 'orders', backoff: { initialMs: 50, maxMs: 500 }, ...options })
    closers.push(() => d.close())
    return d
  }
  const proxy = async (): Promise<FaultProxy> => {
    const p = await faultProxy(cp.apiPort)
    closers.push(() => p.close())
    return p
  }
  /** A namespace with the orders Service and Ready pods at the given IPs (pod names o1, o2...). */
  const fleet = async (ns: string, ips: string[]): Promise<void> => {
    await createNamespace(cp, ns)
    await createService(cp, ns, 'orders')
    for (const [i, ip] of ips.entries()) await createReadyPod(cp, ns, 'orders', `o${i + 1}`, ip)
    await until(async () => (await sliceEndpoints(cp, ns, 'orders')).filter((e) => e.endsWith('true/true/false')).length === ips.length, 'the controller publishing every pod', { timeoutMs: 30_000 })
  }

  /** EndpointSlice watches the API server has open now (apiserver_longrunning_requests). */
  const watchesOpen = async (): Promise<number> => {
    const metrics = String((await cp.api('GET', '/metrics')).body)
    return metrics.split('\n').filter((l) => l.startsWith('apiserver_longrunning_requests{') && l.includes('resource="endpointslices"') && l.includes('verb="WATCH"'))
      .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0)
  }

  before(async () => { cp = await startControlPlane() }, { timeout: 120_000 })
  after(async () => {
    for (const c of closers.reverse()) await c()
    await cp?.stop()
  })

  test("drops a deleted pod's endpoint at the one watch event after the DELETE, while the slice still lists it as serving", async () => {
    await fleet('drop', ['10.0.1.1', '10.0.1.2'])
    const d = discovery('drop')
    await d.ready()
    assert.deepEqual(hosts(d), ['10.0.1.1', '10.0.1.2'])
    let eventsAtDrop = -1
    d.subscribe('orders', (list) => { if (!list.some((i) => i.host === '10.0.1.1')) eventsAtDrop = d.describe().services[0]!.events })
    const before = d.describe().services[0]!.events
    await deletePod(cp, 'drop', 'o1')
    await until(() => eventsAtDrop !== -1, 'the endpoint dropped')
    assert.equal(eventsAtDrop, before + 1, 'the first watch event after the DELETE dropped it')
    assert.deepEqual(hosts(d), ['10.0.1.2'])
    // Negative control: the API server still lists it (serving while terminating); a consumer that
    // only drops endpoints gone from the slice would keep routing to it.
    assert.ok((await sliceEndpoints(cp, 'drop', 'orders')).includes('10.0.1.1 false/true/true'))
  })

  test('a pod that turns ready later ramps in the balancer; the ones ready before the first list are warm', async () => {
    await fleet('ramp', ['10.0.2.1'])
    const d = discovery('ramp', { warmupMs: 600_000 })
    await d.ready()
    const balancer = createBalancer({ service: 'orders', discovery: d, refreshIntervalMs: 0 })
    closers.push(() => balancer.close())
    await createReadyPod(cp, 'ramp', 'orders', 'o2', '10.0.2.2')
    await until(() => hosts(d).length === 2, 'the new pod')
    const added = d.instances('orders').find((i) => i.host === '10.0.2.2')!
    assert.ok(Number(added.metadata['lameduck.registeredAt']) > 0)
    const stats = await until(() => {
      const s = balancer.stats().services[0]!.instances
      return s.length === 2 ? s : undefined
    }, 'the balancer seeing both')
    const byAddress = Object.fromEntries(stats.map((s) => [s.address, s]))
    assert.equal(byAddress['10.0.2.2:8080']!.warming, true, 'the newcomer ramps')
    assert.ok(byAddress['10.0.2.2:8080']!.effectiveWeight < 10)
    assert.equal(byAddress['10.0.2.1:8080']!.warming, false, 'control: the one ready before the first list is warm')
  })

  test('keeps its list through an API-server restart, then follows the watch again', async () => {
    await fleet('restart', ['10.0.3.1', '10.0.3.2'])
    const d = discovery('restart')
    await d.ready()
    const watchesBefore = d.describe().services[0]!.watches
    await cp.killApiServer()
    await until(() => lastError(d) !== undefined, 'a failed call while the API server is down')
    assert.deepEqual(hosts(d), ['10.0.3.1', '10.0.3.2'], 'the list stays while the API server is down')
    await cp.startApiServer()
    await until(() => lastError(d) === undefined && d.describe().services[0]!.watches > watchesBefore, 'watching again')
    await deletePod(cp, 'restart', 'o2')
    await until(() => hosts(d).length === 1, 'the DELETE after the restart', { timeoutMs: 30_000 })
    assert.deepEqual(hosts(d), ['10.0.3.1'])
  })

  test('410 Gone: a watch resumed from a compacted resourceVersion relists; control: without the compaction it resumes', async () => {
    await fleet('gone', ['10.0.4.1', '10.0.4.2', '10.0.4.3'])
    const p = await proxy()
    const d = discovery('gone', {}, p.url)
    await d.ready()
    await until(() => d.describe().services[0]!.watches >= 1 && lastError(d) === undefined, 'the watch')
    const miss = async (pod: string, compact: boolean): Promise<void> => {
      p.hold()
      p.cut()
      await deletePod(cp, 'gone', pod, 0)
      await until(async () => !(await sliceEndpoints(cp, 'gone', 'orders')).some((e) => e.startsWith(`10.0.4.${pod.slice(1)} `)), 'the controller removing it')
      if (compact) await cp.compactEtcd()
      p.release()
    }
    await miss('o1', false)
    await until(() => !hosts(d).includes('10.0.4.1'), 'the missed DELETE, from the resumed watch')
    assert.equal(d.describe().services[0]!.gone, 0, 'control: no compaction, no 410')
    const lists = d.describe().services[0]!.lists
    await miss('o2', true)
    await until(() => !hosts(d).includes('10.0.4.2'), 'the missed DELETE, from the relist')
    assert.equal(d.describe().services[0]!.gone, 1)
    assert.equal(d.describe().services[0]!.lists, lists + 1)
    assert.deepEqual(hosts(d), ['10.0.4.3'])
  })

  test('a watch that hangs is cut and watched again; control: one with the default deadline stays stale', async () => {
    await fleet('hang', ['10.0.5.1', '10.0.5.2'])
    const p = await proxy()
    const open = await watchesOpen()
    const quick = discovery('hang', { watchTimeoutMs: 2_000, watchGraceMs: 1_000, requestTimeoutMs: 2_000 }, p.url)
    const slow = discovery('hang', {}, p.url)
    await Promise.all([quick.ready(), slow.ready()])
    // Both watches are open at the API server (its own gauge), so the freeze catches them streaming.
    await until(async () => await watchesOpen() >= open + 2, 'both watches open at the API server')
    assert.ok(p.freeze() >= 2)
    await deletePod(cp, 'hang', 'o1')
    await until(() => hosts(quick).length === 1, 'the quick one cutting its hung watch and seeing the DELETE', { timeoutMs: 30_000 })
    assert.deepEqual(hosts(quick), ['10.0.5.2'])
    assert.deepEqual(hosts(slow), ['10.0.5.1', '10.0.5.2'], 'control: without the deadline the hung watch hides the DELETE')
  })

  test('RBAC: denied from the start (a typed error, once), and denied later (the last good list kept, recovery)', async () => {
    await fleet('rbac', ['10.0.6.1'])
    const log = logger()
    const denied = discovery('rbac', { logger: log }, undefined, 'nobody')
    await until(() => lastError(denied) === 'LAMEDUCK_ERR_K8S_FORBIDDEN', 'the 403')
    await until(() => denied.describe().services[0]!.lastError !== null && log.lines.filter((l) => l.level === 'debug').length >= 2, 'retries')
    assert.equal(log.lines.filter((l) => l.level === 'warn' && l.code === 'LAMEDUCK_ERR_K8S_FORBIDDEN').length, 1)
    assert.deepEqual(hosts(denied), [])

    await grantReader(cp, 'rbac')
    const p = await proxy()
    const log2 = logger()
    const reader = discovery('rbac', { logger: log2 }, p.url, 'reader')
    await reader.ready()
    assert.deepEqual(hosts(reader), ['10.0.6.1'], 'control: the same user with the Role lists')
    await unbindReader(cp, 'rbac')
    p.cut()
    await until(() => lastError(reader) === 'LAMEDUCK_ERR_K8S_FORBIDDEN', 'the 403 after the RoleBinding went')
    assert.deepEqual(hosts(reader), ['10.0.6.1'], 'the last good list is kept')
    await bindReader(cp, 'rbac')
    await until(() => lastError(reader) === undefined, 'recovery once bound again', { timeoutMs: 30_000 })
    assert.ok(log2.lines.some((l) => l.level === 'info' && l.msg.includes('works again')))
  })

  test('a Service that does not exist yet: a warning, an empty list, and it appears once created', async () => {
    await createNamespace(cp, 'late')
    const log = logger()
    const d = discovery('late', { logger: log })
    await d.ready()
    await until(() => log.lines.some((l) => l.code === 'LAMEDUCK_ERR_K8S_NOT_FOUND'), 'the warning')
    assert.deepEqual(hosts(d), [])
    await createService(cp, 'late', 'orders')
    await createReadyPod(cp, 'late', 'orders', 'o1', '10.0.7.1')
    await until(() => hosts(d).length === 1, 'the Service and its pod', { timeoutMs: 30_000 })
  })

  test('a headless Service with two named ports: the port by name', async () => {
    await createNamespace(cp, 'headless')
    await createService(cp, 'headless', 'orders', { headless: true, ports: [{ name: 'http', port: 80, targetPort: 'http' }, { name: 'grpc', port: 9090, targetPort: 'grpc' }] })
    await createReadyPod(cp, 'headless', 'orders', 'o1', '10.0.8.1', [{ name: 'http', containerPort: 8080 }, { name: 'grpc', containerPort: 50051 }])
    const d = discovery('headless', { port: 'grpc' })
    await until(() => hosts(d).length === 1, 'the pod', { timeoutMs: 30_000 })
    assert.equal(d.instances('orders')[0]!.port, 50051)
  })

  test("the observed window: the own pod's endpoint seen terminating at the DELETE, never before; control: another pod's DELETE", async () => {
    await fleet('own', ['10.0.9.1', '10.0.9.2'])
    const o = ownEndpointObserver({ kubeconfig: cp.kubeconfig('admin'), namespace: 'own', pod: 'o1', service: 'orders' })
    closers.push(() => o.close())
    const leaving: OwnEndpointChange[] = []
    o.on('leaving', (c) => leaving.push(c))
    await until(() => o.state === 'ready', 'its endpoint ready')
    await deletePod(cp, 'own', 'o2')
    await until(async () => (await sliceEndpoints(cp, 'own', 'orders')).includes('10.0.9.2 false/true/true'), 'the other pod terminating')
    await until(() => o.stats.events >= 1, 'the observer seeing that event')
    assert.equal(leaving.length, 0, 'control: not us')
    const deletedAt = Date.now()
    await deletePod(cp, 'own', 'o1')
    await until(() => leaving.length === 1, 'leaving')
    assert.equal(leaving[0]!.state, 'terminating')
    assert.ok(leaving[0]!.at >= deletedAt, 'never before the DELETE')
    assert.match(leaving[0]!.evidence, /10\.0\.9\.1 terminating/)
  })

  test('podAnnotations: a pod still warming when the consumer starts ramps from its lameduck.dev/registered-at; control: without the option it counts as warm', async () => {
    await createNamespace(cp, 'annot')
    await createService(cp, 'annot', 'orders')
    const registeredAt = Date.now() - 30_000
    await createReadyPod(cp, 'annot', 'orders', 'o1', '10.0.10.1', undefined, { 'lameduck.dev/registered-at': String(registeredAt) })
    await createReadyPod(cp, 'annot', 'orders', 'o2', '10.0.10.2', undefined, { 'lameduck.dev/registered-at': new Date(registeredAt).toISOString() })
    await createReadyPod(cp, 'annot', 'orders', 'o3', '10.0.10.3')
    await until(async () => (await sliceEndpoints(cp, 'annot', 'orders')).length === 3, 'the controller publishing the pods', { timeoutMs: 30_000 })
    const d = discovery('annot', { podAnnotations: true, warmupMs: 120_000 })
    await d.ready()
    const at = Object.fromEntries(d.instances('orders').map((i) => [i.host, i.metadata['lameduck.registeredAt']]))
    assert.deepEqual(at, { '10.0.10.1': String(registeredAt), '10.0.10.2': String(registeredAt), '10.0.10.3': undefined })
    const balancer = createBalancer({ service: 'orders', discovery: d, refreshIntervalMs: 0 })
    closers.push(() => balancer.close())
    const stats = Object.fromEntries(balancer.stats().services[0]!.instances.map((s) => [s.address, s]))
    assert.equal(stats['10.0.10.1:8080']!.warming, true)
    assert.ok(stats['10.0.10.1:8080']!.warmupElapsedMs! >= 30_000, 'ramping from the annotation, not from now')
    assert.equal(stats['10.0.10.3:8080']!.warming, false)
    const plain = discovery('annot', { warmupMs: 120_000 })
    await plain.ready()
    assert.ok(plain.instances('orders').every((i) => i.metadata['lameduck.registeredAt'] === undefined), 'control: without podAnnotations every endpoint of the first list is warm')
  })

  test('the readiness gate: the pod condition lameduck.dev/registered set through pods/status, the other conditions kept; denied without the Role', async () => {
    await createNamespace(cp, 'gate')
    const created = await cp.api('POST', '/api/v1/namespaces/gate/pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'g1', labels: { app: 'orders' } },
      spec: { nodeName: NODE, readinessGates: [{ conditionType: 'lameduck.dev/registered' }], containers: [{ name: 'app', image: 'registry.example/app:1' }] }
    })
    assert.equal(created.status, 201)
    await setPodReady(cp, 'gate', 'g1', '10.0.11.1', true)
    const conditions = async (): Promise<Record<string, string>> => Object.fromEntries(((await cp.api('GET', '/api/v1/namespaces/gate/pods/g1')).body.status.conditions as Array<{ type: string, status: string }>).map((c) => [c.type, c.status]))
    assert.equal((await conditions())['lameduck.dev/registered'], undefined, 'control: not there before')
    const writer = podConditionWriter({ kubeconfig: cp.kubeconfig('admin'), namespace: 'gate', pod: 'g1' })
    closers.push(() => writer.close())
    await writer.set(true, { message: 'registered with the registry' })
    assert.deepEqual(await conditions(), { PodScheduled: 'True', Initialized: 'True', ContainersReady: 'True', Ready: 'True', 'lameduck.dev/registered': 'True' })
    await writer.set(false)
    assert.equal((await conditions())['lameduck.dev/registered'], 'False')
    await grantReader(cp, 'gate')
    const denied = podConditionWriter({ kubeconfig: cp.kubeconfig('reader'), namespace: 'gate', pod: 'g1' })
    closers.push(() => denied.close())
    await assert.rejects(denied.set(true), { code: 'LAMEDUCK_ERR_K8S_FORBIDDEN' })
  })
})
