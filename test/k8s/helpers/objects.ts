// The objects the tests make through the API: a namespace, a Node (pods must name an existing
// node or the EndpointSlice controller skips them), a Service, pods made Ready by writing their
// status as a kubelet would (addresses 10.x: the API refuses loopback in EndpointSlices; no
// traffic goes to them), and the RBAC a discovery needs.
import assert from 'node:assert/strict'
import type { ControlPlane } from './control-plane.ts'

export const NODE = 'node-1'

async function ok (cp: ControlPlane, method: string, path: string, body?: unknown): Promise<any> {
  const res = await cp.api(method, path, body)
  assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`)
  return res.body
}

export async function ensureNode (cp: ControlPlane): Promise<void> {
  const res = await cp.api('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE, labels: { 'topology.kubernetes.io/zone': 'zone-a' } } })
  assert.ok(res.status === 201 || res.status === 409, `create node: ${res.status}`)
}

export async function createNamespace (cp: ControlPlane, name: string): Promise<void> {
  await ok(cp, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } })
  await ensureNode(cp)
}

export interface ServiceSpec { headless?: boolean, ports?: Array<{ name: string, port: number, targetPort: number | string }> }

export async function createService (cp: ControlPlane, ns: string, name: string, spec: ServiceSpec = {}): Promise<void> {
  const ports = spec.ports ?? [{ name: 'http', port: 80, targetPort: 8080 }]
  await ok(cp, 'POST', `/api/v1/namespaces/${ns}/services`, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name },
    spec: { selector: { app: name }, ports: ports.map((p) => ({ protocol: 'TCP', ...p })), ...(spec.headless === true ? { clusterIP: 'None' } : {}) }
  })
}

/** A pod of `app` on NODE, Running and Ready at `ip`. */
export async function createReadyPod (cp: ControlPlane, ns: string, app: string, name: string, ip: string, ports: Array<{ name: string, containerPort: number }> = [{ name: 'http', containerPort: 8080 }], annotations: Record<string, string> = {}): Promise<void> {
  await ok(cp, 'POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { app }, annotations },
    spec: { nodeName: NODE, terminationGracePeriodSeconds: 30, containers: [{ name: 'app', image: 'registry.example/app:1', ports }] }
  })
  await setPodReady(cp, ns, name, ip, true)
}

export async function setPodReady (cp: ControlPlane, ns: string, name: string, ip: string, ready: boolean): Promise<void> {
  const now = new Date().toISOString()
  const status = ready ? 'True' : 'False'
  await ok(cp, 'PATCH', `/api/v1/namespaces/${ns}/pods/${name}/status`, {
    status: {
      phase: 'Running',
      hostIP: '10.255.0.1',
      podIP: ip,
      podIPs: [{ ip }],
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
        { type: 'Initialized', status: 'True', lastTransitionTime: now },
        { type: 'ContainersReady', status, lastTransitionTime: now },
        { type: 'Ready', status, lastTransitionTime: now }
      ]
    }
  })
}

/** DELETE as kubectl does (graceful): the pod turns terminating, its endpoint `terminating: true`. */
export async function deletePod (cp: ControlPlane, ns: string, name: string, gracePeriodSeconds = 30): Promise<void> {
  await ok(cp, 'DELETE', `/api/v1/namespaces/${ns}/pods/${name}`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds })
}

/** What the reader user may do in `ns`: read EndpointSlices and Services (the README's Role). */
export async function grantReader (cp: ControlPlane, ns: string): Promise<void> {
  await ok(cp, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'lameduck-discovery' },
    rules: [
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['services'], verbs: ['get'] }
    ]
  })
  await bindReader(cp, ns)
}

export async function bindReader (cp: ControlPlane, ns: string): Promise<void> {
  await ok(cp, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'lameduck-discovery' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'lameduck-discovery' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'reader' }]
  })
}

export async function unbindReader (cp: ControlPlane, ns: string): Promise<void> {
  await ok(cp, 'DELETE', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings/lameduck-discovery`)
}

/** The Service's endpoints as the API server has them: `ip ready/serving/terminating`. */
export async function sliceEndpoints (cp: ControlPlane, ns: string, service: string): Promise<string[]> {
  const list = await ok(cp, 'GET', `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?labelSelector=${encodeURIComponent(`kubernetes.io/service-name=${service}`)}`)
  return (list.items as any[]).flatMap((s) => (s.endpoints ?? []).map((e: any) => `${e.addresses[0]} ${e.conditions.ready}/${e.conditions.serving}/${e.conditions.terminating}`)).sort()
}
