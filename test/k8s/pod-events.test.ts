// podEvents() on a real kube-apiserver v1.34.4: a drain recorded as Events on the pod, as
// `kubectl describe pod` lists them — OfflineStarted, Deregistered and Drained (Normal), a drain
// cut at maxRequestMs and a deregistration the registry never confirmed (Warning) — under a Role
// with exactly `create` on `events`; without it, one warning and no further attempt.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { after, before, describe, test } from 'node:test'
import { until } from '@lameduck/test-utils'
import { memoryRegistry, type Registry } from '@lameduck/core'
import { attach, type LameduckHandle } from '@lameduck/node'
import { podEvents, type PodEvents } from '@lameduck/kubernetes'
import { skipReason, startControlPlane, type ControlPlane } from './helpers/control-plane.ts'
import { createNamespace, createReadyPod } from './helpers/objects.ts'

const reason = skipReason()

interface Logged { level: string, msg: string }
function logger () {
  const lines: Logged[] = []
  const at = (level: string) => (_o: object, msg = ''): void => { lines.push({ level, msg }) }
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

interface ApiEvent { type: string, reason: string, message: string, involvedObject: { kind: string, name: string }, source: { component: string } }

describe('pod events on a real API server', { skip: reason ?? false }, () => {
  let cp: ControlPlane
  const closers: Array<() => unknown> = []

  before(async () => {
    cp = await startControlPlane()
    await createNamespace(cp, 'ev')
    await createReadyPod(cp, 'ev', 'orders', 'p1', '10.0.40.1')
    await createReadyPod(cp, 'ev', 'orders', 'p2', '10.0.40.2')
    // The reader may create events in 'ev' and nothing else there.
    const rbac = '/apis/rbac.authorization.k8s.io/v1/namespaces/ev'
    assert.equal((await cp.api('POST', `${rbac}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'lameduck-events' }, rules: [{ apiGroups: [''], resources: ['events'], verbs: ['create'] }] })).status, 201)
    assert.equal((await cp.api('POST', `${rbac}/rolebindings`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'lameduck-events' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'lameduck-events' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'reader' }] })).status, 201)
  }, { timeout: 120_000 })
  after(async () => {
    for (const c of closers.reverse()) await c()
    await cp?.stop()
  })

  const events = async (pod: string): Promise<ApiEvent[]> => {
    const answer = await cp.api('GET', `/api/v1/namespaces/ev/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${pod}`)}`)
    assert.equal(answer.status, 200)
    return (answer.body as { items: ApiEvent[] }).items
  }
  const app = async (pod: string, user: 'reader' | 'nobody', options: { registry?: Registry, maxRequestMs?: number, shutdownTimeoutMs?: number } = {}) => {
    const log = logger()
    const observer: PodEvents = podEvents({ kubeconfig: cp.kubeconfig(user), namespace: 'ev', pod })
    const server = createServer((req, res) => { if (req.url === '/slow') setTimeout(() => res.end('slow'), 2_000); else res.end('ok') })
    const handle: LameduckHandle = await attach(server, { service: 'orders', host: '127.0.0.1', registry: options.registry ?? memoryRegistry(), windows: { clientFetchMs: 300 }, maxRequestMs: options.maxRequestMs ?? 5_000, shutdownTimeoutMs: options.shutdownTimeoutMs ?? 60_000, signals: false, admin: false, logger: log, observers: [observer] })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    closers.push(async () => { await handle.close(); server.closeAllConnections(); await new Promise((resolve) => server.close(resolve)) })
    await until(() => handle.state === 'serving', 'serving')
    return { handle, log, observer, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }
  }

  test('a drain, then a drain cut at maxRequestMs: Normal and Warning events on the pod, as the API server keeps them', async () => {
    const { handle, observer, url, log } = await app('p1', 'reader', { maxRequestMs: 200 })
    await handle.offline()
    await until(() => observer.sent.length === 3, 'three events accepted')
    await handle.online()
    const slow = fetch(`${url}/slow`).then(async (r) => await r.text(), () => '')
    await until(() => handle.lifecycle.inflight.count === 1, 'the slow request in flight')
    assert.equal((await handle.offline()).inflightAtEnd, 1)
    await slow
    await until(() => observer.sent.length === 6, 'six events accepted')
    const got = await events('p1')
    const summary = got.map((e) => `${e.type} ${e.reason}`).sort()
    assert.deepEqual(summary, ['Normal Deregistered', 'Normal Deregistered', 'Normal Drained', 'Normal OfflineStarted', 'Normal OfflineStarted', 'Warning DrainCut'])
    for (const e of got) {
      assert.equal(e.involvedObject.kind, 'Pod')
      assert.equal(e.source.component, 'lameduck')
      assert.match(e.message, /^lameduck: /)
    }
    assert.match(got.find((e) => e.reason === 'DrainCut')!.message, /maxRequestMs reached with 1 request\(s\) still in flight/)
    assert.match(got.find((e) => e.reason === 'Drained')!.message, /^lameduck: offline in \d+\.\d s \(api\): window 0\.3 s/)
    assert.deepEqual(log.lines.filter((l) => l.level === 'warn' && /pod events/.test(l.msg)), [])
  })

  test('a registry that never confirms: a Warning DeregistrationUnconfirmed', async () => {
    const mem = memoryRegistry()
    const registry: Registry = { register: async (i) => { await mem.register(i) }, deregister: async () => { throw new Error('registry down') }, close: async () => { await mem.close() } }
    const { handle, observer } = await app('p2', 'reader', { registry, maxRequestMs: 100, shutdownTimeoutMs: 1_500 })
    const report = await handle.offline()
    assert.equal(report.deregistration.state, 'unconfirmed')
    await until(() => observer.sent.some((e) => e.reason === 'DeregistrationUnconfirmed'), 'the warning accepted')
    await observer.idle() // Drained comes from the same report: its POST may still be on its way
    const got = (await events('p2')).map((e) => `${e.type} ${e.reason}`).sort()
    assert.deepEqual(got, ['Normal Drained', 'Normal OfflineStarted', 'Warning DeregistrationUnconfirmed'])
  })

  test('without the Role: one warning naming the fix, no event, and no further attempt', async () => {
    const before = (await events('p1')).length
    const { handle, observer, log } = await app('p1', 'nobody')
    await handle.offline()
    await until(() => log.lines.some((l) => l.level === 'warn' && /pod events/.test(l.msg)), 'the warning')
    await observer.idle() // the first drain's POSTs went out before the first 403 came back
    const tried = observer.attempts
    await handle.online()
    await handle.offline()
    await observer.idle()
    assert.equal(observer.attempts, tried, 'after the 403 no event is tried again')
    const warnings = log.lines.filter((l) => l.level === 'warn' && /pod events/.test(l.msg))
    assert.equal(warnings.length, 1)
    assert.match(warnings[0]!.msg, /needs a Role with `create` on `events`.*403/)
    assert.deepEqual(observer.sent, [])
    assert.equal((await events('p1')).length, before)
  })
})
