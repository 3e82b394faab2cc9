// node --conditions=@lameduck/source --expose-gc test/k8s/bench.ts [--runs 40]
// On the real control plane (test/k8s/install.sh first): how long from a pod DELETE to the
// endpoint leaving kubernetesDiscovery()'s list (median, p99), and the heap the discovery
// holds per 1,000 endpoints (10 EndpointSlices of 1,000 endpoints, written through the API).
import { parseArgs } from 'node:util'
import { kubernetesDiscovery } from '@lameduck/kubernetes'
import { until } from '@lameduck/test-utils'
import { skipReason, startControlPlane } from './helpers/control-plane.ts'
import { createNamespace, createReadyPod, createService, deletePod } from './helpers/objects.ts'

const { values } = parseArgs({ options: { runs: { type: 'string', default: '40' } } })
const runs = Number(values.runs)
const reason = skipReason()
if (reason !== undefined) { console.log(`k8s bench: skipped: ${reason}`); process.exit(0) }

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)]!
const cp = await startControlPlane()
try {
  await createNamespace(cp, 'bench')
  await createService(cp, 'bench', 'orders')
  const d = kubernetesDiscovery({ kubeconfig: cp.kubeconfig('admin'), namespace: 'bench', service: 'orders' })
  await d.ready()
  const series = async (grace: number, from: number): Promise<number[]> => {
    const drops: number[] = []
    for (let i = from; i < from + runs; i++) {
      const ip = `10.2.${Math.floor(i / 200)}.${(i % 200) + 1}`
      await createReadyPod(cp, 'bench', 'orders', `p${i}`, ip)
      await until(() => d.instances('orders').some((x) => x.host === ip), 'the pod listed', { timeoutMs: 30_000 })
      let droppedAt = 0
      const off = d.subscribe('orders', (list) => { if (droppedAt === 0 && !list.some((x) => x.host === ip)) droppedAt = performance.now() })
      const t0 = performance.now()
      await deletePod(cp, 'bench', `p${i}`, grace)
      await until(() => droppedAt !== 0, 'the drop', { timeoutMs: 30_000, intervalMs: 1 })
      off()
      drops.push(droppedAt - t0)
    }
    return drops
  }
  // gracePeriodSeconds 30: the endpoint turns terminating (what a real rollout does first); 0: it is removed.
  for (const [grace, from] of [[30, 0], [0, runs]] as const) {
    const drops = await series(grace, from)
    console.log(`DELETE → endpoint dropped by kubernetesDiscovery (${runs} pods, gracePeriodSeconds ${grace}): median ${pct(drops, 0.5).toFixed(1)} ms, p99 ${pct(drops, 0.99).toFixed(1)} ms, max ${Math.max(...drops).toFixed(1)} ms`)
  }
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
  console.log(`heap held for ${listed} endpoints: ${((after - before) / 1024 / 1024).toFixed(1)} MiB, ${((after - before) / 1024 / (listed / 1000)).toFixed(0)} KiB per 1,000 endpoints`)
  big.close()
} finally {
  await cp.stop()
}
