// The rollout lab's `kubernetes` path on a real control plane: every lab pod is mirrored into the
// real API server as a Pod (created and made Ready when the lab's pod turns ready, DELETEd with a
// 30 s grace period when the lab deletes it), the real kube-controller-manager writes the
// EndpointSlices, and the consumer reads them through kubernetesDiscovery(). Pod IPs are 10.x (the
// API refuses loopback in slices); the consumer maps each to the lab pod's port on 127.0.0.1 (the
// pod network). What the API cannot show (kube-proxy, an ingress) is not on this path: the
// consumer balances client-side.
import { Agent, Pool, type Dispatcher } from 'undici'
import { createBalancer } from '@lameduck/balancer'
import { kubernetesDiscovery, type KubernetesDiscovery } from '@lameduck/kubernetes'
import type { ResolvedRollout, TrafficPath } from '@lameduck/devkit'
import type { ControlPlane } from '../helpers/control-plane.ts'
import { createNamespace, createReadyPod, createService, deletePod } from '../helpers/objects.ts'

const SERVICE = 'orders'

/** What the path reads of a lab pod. */
interface LabPod { id: string, targetPort: number, terminatingAt: number | null }

export interface KubernetesPathStats {
  /** API calls that mirrored the lab's pods (create+ready, delete). */
  created: number
  deleted: number
  /** Watch events the consumer's discovery read. */
  events: () => number
}

/** A namespace per run; the control plane is the caller's (one per table, a few seconds to start). */
export function kubernetesPath (cp: ControlPlane, namespace: string, stats: KubernetesPathStats = { created: 0, deleted: 0, events: () => 0 }) {
  return async (o: ResolvedRollout): Promise<TrafficPath> => {
    await createNamespace(cp, namespace)
    await createService(cp, namespace, SERVICE)
    const ips = new Map<string, string>()
    const ports = new Map<string, number>()
    const mirrored = new Map<string, LabPod>()
    let queue: Promise<void> = Promise.resolve()
    const ipOf = (pod: LabPod): string => {
      let ip = ips.get(pod.id)
      if (ip === undefined) {
        const n = ips.size
        ip = `10.6.${Math.floor(n / 250)}.${(n % 250) + 1}`
        ips.set(pod.id, ip)
      }
      ports.set(ip, pod.targetPort)
      return ip
    }
    /** The pod network: a 10.x origin reaches the lab pod on loopback. */
    const local = (host: string): string => {
      const port = ports.get(host)
      if (port === undefined) throw Object.assign(new Error(`no lab pod at ${host}`), { code: 'ECONNREFUSED' })
      return `http://127.0.0.1:${port}`
    }
    const discovery: KubernetesDiscovery = kubernetesDiscovery({ kubeconfig: cp.kubeconfig('admin'), namespace, service: SERVICE, port: 'http', backoff: { initialMs: 50, maxMs: 500 } })
    stats.events = () => discovery.describe().services[0]?.events ?? 0
    const balancer = createBalancer({ service: SERVICE, discovery, refreshIntervalMs: 0, curve: 'linear', consumerId: 'rollout-consumer', factory: (origin, opts) => new Pool(local(new URL(origin).hostname), opts) })
    const plain = plainMapped(discovery, local)
    // The lab's endpoints controller, mirrored into the real API: the real one then writes the slices.
    const reconcile = async (ready: LabPod[]): Promise<void> => {
      const listed = new Set(ready.map((p) => p.id))
      for (const pod of ready) {
        if (mirrored.has(pod.id)) continue
        mirrored.set(pod.id, pod)
        await createReadyPod(cp, namespace, SERVICE, pod.id, ipOf(pod), [{ name: 'http', containerPort: 8080 }])
        stats.created++
      }
      for (const [id, pod] of mirrored) {
        if (listed.has(id) || pod.terminatingAt === null) continue
        mirrored.delete(id)
        await deletePod(cp, namespace, id, 30)
        stats.deleted++
      }
    }
    return {
      name: 'kubernetes-api',
      providerRegistry: { kind: 'none' },
      // The lab's endpoint-lag model stays for what the API cannot show (kube-proxy, ingress): fixed, unscaled.
      windows: { endpointLagMs: o.endpointLagMs },
      consumer: o.consumer === 'plain' ? plain : { url: (path) => `http://${SERVICE}${path}`, dispatcher: balancer },
      onEndpoints: (pods) => { const snapshot = [...pods] as unknown as LabPod[]; queue = queue.then(() => reconcile(snapshot)).catch((err: unknown) => { o.log(`kubernetes path: ${String(err)}`) }) },
      async discovered (count) {
        const deadline = Date.now() + 30_000
        while (discovery.instances(SERVICE).length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
      },
      describe: { kubernetes: 'real kube-apiserver + kube-controller-manager', namespace, consumer: o.consumer === 'plain' ? 'round robin over kubernetesDiscovery' : '@lameduck/balancer over kubernetesDiscovery' },
      scenario: { registry: 'kubernetes' },
      async close () {
        await queue
        await plain.dispatcher.close()
        await balancer.close()
        discovery.close()
      }
    }
  }
}

/** A consumer that knows nothing of lameduck: round robin over the discovery's list, keep-alive, no retries. */
function plainMapped (discovery: KubernetesDiscovery, local: (host: string) => string): { url: (path: string) => string, dispatcher: Dispatcher } {
  let next = 0
  return {
    dispatcher: new Agent({ keepAliveTimeout: 30_000, connections: 32 }),
    url (path) {
      const list = discovery.instances(SERVICE)
      const target = list[next++ % Math.max(1, list.length)]
      if (target === undefined) throw Object.assign(new Error(`no instance of ${SERVICE}`), { code: 'LAMEDUCK_ERR_NO_INSTANCE' })
      return `${local(target.host)}${path}`
    }
  }
}
