// Which proxy sidecar a pod runs with, for the shutdown budget (the plugin's
// sidecar drain, Istio's own drain) and the sidecar checks: --sidecar, else
// Istio injection (pod label or annotation, or its Namespace's labels when the
// input holds the Namespace), else the proxy containers it declares.
import { isRecord, type ManifestObject, type Path } from './manifest.ts'
import { proxyKind, type PodTemplate } from './pod.ts'

export type SidecarFlag = 'istio' | 'native' | 'none'
export const SIDECAR_FLAGS: readonly SidecarFlag[] = ['istio', 'native', 'none']

export const ISTIO_INJECT = 'sidecar.istio.io/inject'
export const ISTIO_NATIVE = 'sidecar.istio.io/native-sidecar'
const NAMESPACE_INJECTION = 'istio-injection'
const ISTIO_REVISION = 'istio.io/rev'

/** Namespaces in the input whose labels turn Istio injection on, by name. */
export type InjectingNamespaces = Map<string, ManifestObject>

export function injectingNamespaces (objects: ManifestObject[]): { injecting: InjectingNamespaces, count: number } {
  const injecting: InjectingNamespaces = new Map()
  let count = 0
  for (const o of objects) {
    if (o.kind !== 'Namespace') continue
    count++
    const metadata = isRecord(o.value.metadata) ? o.value.metadata : {}
    const labels = isRecord(metadata.labels) ? metadata.labels : {}
    const label = labels[NAMESPACE_INJECTION]
    // istio-injection=disabled wins over a revision label, as in Istio's webhook selectors.
    if (label === 'enabled' || (label !== 'disabled' && typeof labels[ISTIO_REVISION] === 'string')) injecting.set(o.name, o)
  }
  return { injecting, count }
}

export interface Injection {
  /** Istio injects istio-proxy into this pod. */
  injected: boolean
  /** Where that was decided, for messages. */
  why: string
  /** The pod's own label or annotation, when that is what decided. */
  path?: Path
}

/** Istio's injection decision for a pod: its own opt-out or opt-in first, then its Namespace. */
export function istioInjection (pod: PodTemplate, namespaces: { injecting: InjectingNamespaces, count: number }, flag: SidecarFlag | undefined): Injection {
  if (flag === 'istio') return { injected: true, why: '--sidecar istio' }
  if (flag !== undefined) return { injected: false, why: `--sidecar ${flag}` }
  const own = pod.labels[ISTIO_INJECT] !== undefined
    ? { value: pod.labels[ISTIO_INJECT], path: [...pod.metaPath, 'labels', ISTIO_INJECT] }
    : pod.annotations[ISTIO_INJECT] !== undefined ? { value: pod.annotations[ISTIO_INJECT], path: [...pod.metaPath, 'annotations', ISTIO_INJECT] } : undefined
  if (own?.value === 'false') return { injected: false, why: `${ISTIO_INJECT}: "false"` }
  if (own?.value === 'true') return { injected: true, why: `${ISTIO_INJECT}: "true"`, path: own.path }
  if (pod.labels[ISTIO_REVISION] !== undefined) return { injected: true, why: `label ${ISTIO_REVISION}`, path: [...pod.metaPath, 'labels', ISTIO_REVISION] }
  // A workload without a namespace goes where the input's only Namespace is (`kubectl apply -f` of one app's bundle).
  const name = pod.object.namespace ?? (namespaces.count === 1 ? [...namespaces.injecting.keys()][0] : undefined)
  const ns = name === undefined ? undefined : namespaces.injecting.get(name)
  if (ns !== undefined) return { injected: true, why: `Namespace/${ns.name} enables injection (${NAMESPACE_INJECTION}=enabled or ${ISTIO_REVISION})` }
  return { injected: false, why: '' }
}

/** The sidecar kind the shutdown budget counts: 'istio', 'native' (any Envoy), or null. */
export function budgetSidecar (pod: PodTemplate, injection: Injection, flag: SidecarFlag | undefined): 'istio' | 'native' | null {
  if (flag !== undefined) return flag === 'none' ? null : flag
  const proxies = [...pod.containers, ...pod.initContainers.filter((c) => c.native)].map(proxyKind)
  if (injection.injected || proxies.includes('istio') || pod.annotations[ISTIO_NATIVE] === 'true') return 'istio'
  return proxies.includes('envoy') ? 'native' : null
}
