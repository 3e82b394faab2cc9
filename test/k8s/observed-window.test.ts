// The observed window and the readiness gate wired into the lifecycle, on a real kube-apiserver and
// kube-controller-manager v1.34.4: the window's endpoint term ends when the real EndpointSlice
// controller marks this pod's endpoint terminating (plus the data-plane rest), never before; without
// RBAC it falls back to the preset; the gate condition is written only once the registry confirmed;
// and the Role `lameduck plan` prints is exactly enough, as the pod's own service account.
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { parseAllDocuments } from 'yaml'
import { until } from '@lameduck/test-utils'
import { createLifecycle, memoryRegistry, silentLogger, type LifecycleOptions, type LifecycleStatus, type Lifecycle, type OfflineDone, type OfflineReport, type Registry } from '@lameduck/core'
import { attach } from '@lameduck/node'
import { observedWindow, readinessGate, type ObservedWindow } from '@lameduck/kubernetes'
import { plan } from '../../packages/cli/src/commands/plan.ts'
import { runCommand } from '../../packages/cli/test/helpers.ts'
import { skipReason, startControlPlane, type ControlPlane } from './helpers/control-plane.ts'
import { createNamespace, createReadyPod, createService, deletePod, sliceEndpoints } from './helpers/objects.ts'

const reason = skipReason()
const instance = (ip: string): { id: string, service: string, host: string, port: number } => ({ id: `${ip}:orders:8080`, service: 'orders', host: ip, port: 8080 })

interface Logged { level: string, msg: string }
function logger (): { lines: Logged[], debug: (o: object, m?: string) => void, info: (o: object, m?: string) => void, warn: (o: object, m?: string) => void, error: (o: object, m?: string) => void } {
  const lines: Logged[] = []
  const at = (level: string) => (_o: object, msg = ''): void => { lines.push({ level, msg }) }
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

describe('the observed window and the readiness gate on a real API server', { skip: reason ?? false }, () => {
  let cp: ControlPlane
  const closers: Array<() => unknown> = []
  /** A serving lifecycle; the window's preset is a short endpoint lag, so only evidence can hold it longer. */
  const serving = async (ip: string, options: Partial<LifecycleOptions>): Promise<Lifecycle> => {
    const lifecycle = createLifecycle({ windows: { endpointLagMs: 300 }, maxRequestMs: 1_000, shutdownTimeoutMs: 120_000, ...options })
    closers.push(() => lifecycle.stopped())
    await lifecycle.start(instance(ip))
    return lifecycle
  }
  const evidence = (ns: string, pod: string, user: 'admin' | 'nobody' = 'admin', extra: Record<string, unknown> = {}): ObservedWindow => {
    const w = observedWindow({ kubeconfig: cp.kubeconfig(user), namespace: ns, pod, dataPlaneLagMs: 250, backoff: { initialMs: 50, maxMs: 500 }, ...extra })
    closers.push(() => w.close())
    return w
  }
  const fleet = async (ns: string, pods: Array<[string, string]>): Promise<void> => {
    await createNamespace(cp, ns)
    await createService(cp, ns, 'orders')
    for (const [name, ip] of pods) await createReadyPod(cp, ns, 'orders', name, ip)
    await until(async () => (await sliceEndpoints(cp, ns, 'orders')).filter((e) => e.endsWith('true/true/false')).length === pods.length, 'the controller publishing every pod', { timeoutMs: 30_000 })
  }

  before(async () => { cp = await startControlPlane() }, { timeout: 120_000 })
  after(async () => {
    for (const c of closers.reverse()) await c()
    await cp?.stop()
  })

  test("the window ends when the controller marks this pod's endpoint terminating (+ the rest), never before; control: the preset alone ends before the flip", async () => {
    await fleet('flip', [['o1', '10.0.20.1'], ['o2', '10.0.20.2']])
    const w = evidence('flip', 'o1')
    const observed = await serving('10.0.20.1', { windowEvidence: w })
    const control = await serving('10.0.20.2', {})
    await until(() => w.observer?.state === 'ready', 'the observer seeing its endpoint ready')
    const observedDone = observed.offline('SIGTERM')
    const controlReport = await control.offline('SIGTERM')
    // The control's 300 ms preset is over; the endpoint has not flipped (nothing deleted it yet).
    assert.equal(observed.state, 'draining', 'never before the flip')
    assert.equal(observed.status().drain!.windowTerms[1]!.by, 'pending')
    assert.equal(observed.status().windowEvidence!.reading.state, 'pending')
    const deletedAt = Date.now()
    assert.ok(controlReport.windowEndedAt! < deletedAt, 'control: the preset window ended before the endpoint flipped')
    await deletePod(cp, 'flip', 'o1')
    const report: OfflineReport = await observedDone
    const term = report.windowTerms.find((t) => t.term === 'endpointLagMs')!
    assert.equal(term.by, 'observed')
    assert.match(term.detail, /kubernetes endpoint: EndpointSlice '.+' lists 10\.0\.20\.1 terminating \(terminating\) \+ 0\.25 s rest/)
    const flippedAt = term.endsAt! - 250
    assert.ok(flippedAt >= deletedAt, 'the flip was seen after the DELETE')
    assert.ok(report.windowEndedAt! >= flippedAt + 250, 'the window ended no sooner than the flip + the rest')
    assert.ok((await sliceEndpoints(cp, 'flip', 'orders')).includes('10.0.20.1 false/true/true'), 'the API server lists it serving-terminating')
  })

  test('through attach(): windowEvidence and observers on the engine; admin /status shows the evidence, /offline?wait=true the terms', async () => {
    await fleet('engine', [['e1', '10.0.24.1']])
    const server = createServer((_req, res) => res.end('ok'))
    const w = evidence('engine', 'e1')
    const gate = readinessGate({ kubeconfig: cp.kubeconfig('admin'), namespace: 'engine', pod: 'e1' })
    const lameduck = await attach(server, { service: 'orders', host: '10.0.24.1', windows: { endpointLagMs: 300 }, maxRequestMs: 1_000, shutdownTimeoutMs: 60_000, signals: false, admin: { port: 0 }, terminationMessage: false, logger: silentLogger, windowEvidence: w, observers: [gate] })
    closers.push(async () => { await lameduck.close(); await new Promise((resolve) => server.close(resolve)) })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    await until(() => lameduck.state === 'serving' && w.observer?.state === 'ready', 'serving, the endpoint seen ready')
    await until(() => gate.status === true, 'the gate set by the engine\'s observer')
    const status = await (await fetch(`${lameduck.adminUrl!}/status`)).json() as LifecycleStatus
    assert.equal(status.windowEvidence!.name, 'kubernetes endpoint')
    assert.equal(status.windowEvidence!.endpoint, 'ready')
    assert.deepEqual(status.windowEvidence!.reading, { state: 'pending', detail: "pod 'e1' is still ready in its EndpointSlice" })
    const offline = fetch(`${lameduck.adminUrl!}/offline?wait=true`, { method: 'POST' })
    await until(() => lameduck.state === 'draining', 'draining')
    await deletePod(cp, 'engine', 'e1')
    const done = await (await offline).json() as OfflineDone
    assert.deepEqual(done.report.windowTerms.map((t) => [t.term, t.by]), [['registry', 'none'], ['endpointLagMs', 'observed']])
    assert.match(done.report.windowTerms[1]!.detail, /10\.0\.24\.1 terminating/)
  })

  test('without RBAC (the nobody user): the preset window, the reason in the report, said once', async () => {
    await fleet('denied', [['d1', '10.0.21.1']])
    const log = logger()
    const w = evidence('denied', 'd1', 'nobody', { logger: log })
    const lifecycle = await serving('10.0.21.1', { windowEvidence: w })
    await until(() => w.read().state === 'unavailable', 'the evidence unavailable (403)')
    const started = Date.now()
    const report = await lifecycle.offline('SIGTERM')
    const term = report.windowTerms.find((t) => t.term === 'endpointLagMs')!
    assert.equal(term.by, 'preset')
    assert.match(term.detail, /LAMEDUCK_ERR_K8S_FORBIDDEN/)
    assert.ok(report.windowEndedAt! - report.startedAt >= 300, 'the preset, in full')
    assert.ok(report.startedAt >= started)
    assert.equal(log.lines.filter((l) => l.msg.includes('observed window is unavailable')).length, 1)
  })

  test('the readiness gate: lameduck.dev/registered only after the registry confirmed, False once offline', async () => {
    await createNamespace(cp, 'gated')
    await cp.api('POST', '/api/v1/namespaces/gated/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'g1', labels: { app: 'orders' } }, spec: { nodeName: 'node-1', readinessGates: [{ conditionType: 'lameduck.dev/registered' }], containers: [{ name: 'app', image: 'registry.example/app:1' }] } })
    const condition = async (): Promise<string | undefined> => ((await cp.api('GET', '/api/v1/namespaces/gated/pods/g1')).body.status?.conditions ?? []).find((c: { type: string }) => c.type === 'lameduck.dev/registered')?.status
    const inner = memoryRegistry()
    let release = (): void => {}
    let registering = false
    const held = new Promise<void>((resolve) => { release = resolve })
    const registry: Registry = { async register (i, call) { registering = true; await held; await inner.register(i, call) }, deregister: (i, call) => inner.deregister(i, call), close: () => inner.close() }
    const lifecycle = createLifecycle({ registry, windows: 'none', maxRequestMs: 1_000 })
    closers.push(() => lifecycle.stopped())
    const gate = readinessGate({ kubeconfig: cp.kubeconfig('admin'), namespace: 'gated', pod: 'g1' })
    closers.push(gate.attach({ lifecycle, logger: logger() }))
    const started = lifecycle.start(instance('10.0.22.1'))
    await until(() => registering, 'register() sent')
    assert.equal(await condition(), undefined, 'control: no condition while the registry has not confirmed')
    release()
    await started
    await until(async () => (await condition()) === 'True', 'the condition True on the API server')
    await lifecycle.offline()
    await until(async () => (await condition()) === 'False', 'False once offline')
  })

  test("the Role `lameduck plan --observed-window --readiness-gate` prints is enough as the pod's service account; control: a service account without it is denied", async () => {
    await createNamespace(cp, 'planned')
    await createService(cp, 'planned', 'orders')
    await createReadyPod(cp, 'planned', 'orders', 'p1', '10.0.23.1')
    const out = await runCommand(plan, ['--windows', 'kubernetes', '--observed-window', '--readiness-gate'])
    for (const doc of parseAllDocuments(out.stdout).map((d) => d.toJSON() as Record<string, any>).slice(1)) {
      const path = doc.kind === 'ServiceAccount' ? '/api/v1/namespaces/planned/serviceaccounts' : `/apis/rbac.authorization.k8s.io/v1/namespaces/planned/${doc.kind === 'Role' ? 'roles' : 'rolebindings'}`
      const res = await cp.api('POST', path, doc)
      assert.equal(res.status, 201, `${String(doc.kind)}: ${JSON.stringify(res.body).slice(0, 300)}`)
    }
    await cp.api('POST', '/api/v1/namespaces/planned/serviceaccounts', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'unbound' } })
    const kubeconfigFor = async (sa: string): Promise<string> => {
      const res = await cp.api('POST', `/api/v1/namespaces/planned/serviceaccounts/${sa}/token`, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } })
      assert.equal(res.status, 201, JSON.stringify(res.body).slice(0, 300))
      const path = join(cp.dir, `kubeconfig-sa-${sa}.json`)
      writeFileSync(path, JSON.stringify({ apiVersion: 'v1', kind: 'Config', 'current-context': 'sa', clusters: [{ name: 'lab', cluster: { server: cp.server, 'certificate-authority-data': cp.ca.toString('base64') } }], users: [{ name: sa, user: { token: res.body.status.token } }], contexts: [{ name: 'sa', context: { cluster: 'lab', user: sa, namespace: 'planned' } }] }))
      return path
    }
    const asPlanned = await kubeconfigFor('orders-lameduck')
    const w = observedWindow({ kubeconfig: asPlanned, pod: 'p1' })
    closers.push(() => w.close())
    await until(() => w.observer?.state === 'ready', 'the planned account watching its endpoint')
    const gate = readinessGate({ kubeconfig: asPlanned, pod: 'p1' })
    closers.push(() => gate.writer?.close())
    await gate.writer!.set(true)

    const asUnbound = await kubeconfigFor('unbound')
    const denied = observedWindow({ kubeconfig: asUnbound, pod: 'p1', backoff: { initialMs: 50, maxMs: 200 } })
    closers.push(() => denied.close())
    await until(() => denied.read().state === 'unavailable', 'control: the unbound account denied')
    assert.match((denied.read() as { detail: string }).detail, /FORBIDDEN/)
    const deniedGate = readinessGate({ kubeconfig: asUnbound, pod: 'p1' })
    closers.push(() => deniedGate.writer?.close())
    await assert.rejects(deniedGate.writer!.set(true), { code: 'LAMEDUCK_ERR_K8S_FORBIDDEN' })
  })
})
