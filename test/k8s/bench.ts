// node --conditions=@lameduck/source --expose-gc test/k8s/bench.ts [--runs 40]
// On the real control plane (test/k8s/install.sh first): how long from a pod DELETE to the
// endpoint leaving kubernetesDiscovery()'s list (median, p99), beside the API server's own
// event time (a bare watch on the same slices, reading the first event that shows the endpoint
// out: the controller's and the API server's share), and the heap the discovery holds per
// 1,000 endpoints (10 EndpointSlices of 1,000 endpoints, written through the API). Prints
// markdown (`npm run bench` appends it to bench-results/RESULTS.md when the control plane is cached).
import https from 'node:https'
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { kubernetesDiscovery } from '@lameduck/kubernetes'
import { until } from '@lameduck/test-utils'
import { K8S_VERSION, skipReason, startControlPlane, type ControlPlane } from './helpers/control-plane.ts'
import { createNamespace, createReadyPod, createService, deletePod } from './helpers/objects.ts'

const { values } = parseArgs({ options: { runs: { type: 'string', default: '40' } } })
const runs = Number(values.runs)
const reason = skipReason()
if (reason !== undefined) { console.log(`## Kubernetes API (test/k8s/bench.ts)\n\nSkipped: ${reason}.`); process.exit(0) }

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)]!
const row = (what: string, xs: number[]): string => `| ${what} | ${xs.length} | ${pct(xs, 0.5).toFixed(1)} | ${pct(xs, 0.99).toFixed(1)} | ${Math.max(...xs).toFixed(1)} |`

/** A bare watch of a Service's EndpointSlices: calls `onEvent` with each event's object, as it arrives. */
function rawWatch (cp: ControlPlane, ns: string, service: string, onEvent: (slice: any) => void): () => void {
  const token = (JSON.parse(readFileSync(cp.kubeconfig('admin'), 'utf8')) as { users: Array<{ user: { token: string } }> }).users[0]!.user.token
  const url = new URL(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?watch=1&labelSelector=${encodeURIComponent(`kubernetes.io/service-name=${service}`)}`, cp.server)
  const req = https.get(url, { ca: cp.ca, headers: { authorization: `Bearer ${token}` } }, (res) => {
    let buffered = ''
    res.on('data', (c: Buffer) => {
      buffered += c.toString()
      for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl)
        buffered = buffered.slice(nl + 1)
        if (line !== '') onEvent(JSON.parse(line).object)
      }
    })
    res.on('error', () => {})
  })
  req.on('error', () => {})
  return () => req.destroy()
}

/** Whether the slice still lists `ip` as ready and not terminating. */
const routable = (slice: any, ip: string): boolean => (slice?.endpoints ?? []).some((e: any) => e.addresses?.includes(ip) && e.conditions?.ready !== false && e.conditions?.terminating !== true)

const cp = await startControlPlane()
try {
  await createNamespace(cp, 'bench')
  await createService(cp, 'bench', 'orders')
  const d = kubernetesDiscovery({ kubeconfig: cp.kubeconfig('admin'), namespace: 'bench', service: 'orders' })
  await d.ready()
  let watched: (slice: any) => void = () => {}
  const stopRaw = rawWatch(cp, 'bench', 'orders', (slice) => watched(slice))
  const series = async (grace: number, from: number): Promise<{ api: number[], discovery: number[] }> => {
    const api: number[] = []
    const discovery: number[] = []
    for (let i = from; i < from + runs; i++) {
      const ip = `10.2.${Math.floor(i / 200)}.${(i % 200) + 1}`
      await createReadyPod(cp, 'bench', 'orders', `p${i}`, ip)
      await until(() => d.instances('orders').some((x) => x.host === ip), 'the pod listed', { timeoutMs: 30_000 })
      let droppedAt = 0
      let eventAt = 0
      let deleting = false
      watched = (slice) => { if (deleting && eventAt === 0 && !routable(slice, ip)) eventAt = performance.now() }
      const off = d.subscribe('orders', (list) => { if (droppedAt === 0 && !list.some((x) => x.host === ip)) droppedAt = performance.now() })
      const t0 = performance.now()
      deleting = true
      await deletePod(cp, 'bench', `p${i}`, grace)
      await until(() => droppedAt !== 0 && eventAt !== 0, 'the drop', { timeoutMs: 30_000, intervalMs: 1 })
      off()
      api.push(eventAt - t0)
      discovery.push(droppedAt - t0)
    }
    return { api, discovery }
  }
  const lines = [
    '## Kubernetes API: a pod DELETE to its endpoint out of the pick (test/k8s/bench.ts)',
    '',
    `Real kube-apiserver and kube-controller-manager v${K8S_VERSION} on loopback (etcd 3.4), one Service, ${runs} pods per row deleted one at a time. "API event": a bare watch of the same EndpointSlices sees the first event that shows the endpoint out (the controller's and the API server's share). "kubernetesDiscovery": the endpoint leaves its list.`,
    '',
    '| from DELETE to | runs | median ms | p99 ms | max ms |',
    '|---|---|---|---|---|'
  ]
  // gracePeriodSeconds 30: the endpoint turns terminating (what a real rollout does first); 0: it is removed.
  for (const [grace, from] of [[30, 0], [0, runs]] as const) {
    const { api, discovery } = await series(grace, from)
    const how = grace === 30 ? 'terminating (grace 30 s)' : 'removed (grace 0)'
    lines.push(row(`API event: endpoint ${how}`, api), row(`kubernetesDiscovery drops it, ${how}`, discovery))
  }
  stopRaw()
  d.close()

  // Heap: 10 slices × 1,000 endpoints of a Service without selector (slices managed by hand).
  await createNamespace(cp, 'heap')
  for (let s = 0; s < 10; s++) {
    const endpoints = Array.from({ length: 1000 }, (_, i) => ({ addresses: [`10.3.${s * 4 + Math.floor(i / 250)}.${(i % 250) + 1}`], conditions: { ready: true }, targetRef: { kind: 'Pod', name: `pod-${s}-${i}`, uid: `uid-${s}-${i}` }, nodeName: 'node-1' }))
    const res = await cp.api('POST', '/apis/discovery.k8s.io/v1/namespaces/heap/endpointslices', { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: `big-${s}`, labels: { 'kubernetes.io/service-name': 'big' } }, addressType: 'IPv4', ports: [{ name: 'http', port: 8080 }], endpoints })
    if (res.status !== 201) throw new Error(`slice ${s}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
  }
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('run with --expose-gc')
  gc(); gc()
  const before = process.memoryUsage().heapUsed
  const big = kubernetesDiscovery({ kubeconfig: cp.kubeconfig('admin'), namespace: 'heap', service: 'big' })
  await big.ready()
  const listed = big.instances('big').length
  gc(); gc()
  const after = process.memoryUsage().heapUsed
  lines.push('', `Heap held by kubernetesDiscovery for ${listed} endpoints (10 slices of 1,000): ${((after - before) / 1024 / 1024).toFixed(1)} MiB, ${((after - before) / 1024 / (listed / 1000)).toFixed(0)} KiB per 1,000 endpoints.`)
  big.close()
  console.log(lines.join('\n'))
} finally {
  await cp.stop()
}
