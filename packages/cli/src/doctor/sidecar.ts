// Which proxy sidecar a pod runs with, for the shutdown budget (the plugin's
// sidecar drain, Istio's own drain) and the sidecar checks: --sidecar, else
// Istio injection (pod label or annotation, or its Namespace's labels when the
// input holds the Namespace), else the proxy containers it declares.
import { isRecord, type ManifestObject, type Path } from './manifest.ts'
import { proxyKind, type PodTemplate } from './pod.ts'

export type SidecarFlag = 'istio' | 'native' | 'none'
export const SIDECAR_FLAGS: readonly SidecarFlag[] = ['istio', 'native', 'none']

export const ISTIO_INJECT = 'sidecar.istio.io/inject'
/** Istio's per-pod switch (1.24+; istio/istio#53452): wins over the mesh's ENABLE_NATIVE_SIDECARS. */
export const ISTIO_NATIVE = 'sidecar.istio.io/nativeSidecar'
/** Ambient mode (GA in 1.24): a label on the pod or its Namespace; ztunnel, no per-pod proxy. */
export const ISTIO_DATAPLANE = 'istio.io/dataplane-mode'
/** Istio's default stats matcher keeps no http.* stat; these two feed the sidecar's idle rule. */
export const ISTIO_STATS_SUFFIXES = 'sidecar.istio.io/statsInclusionSuffixes'
export const IDLE_RULE_SUFFIXES = ['downstream_rq_active', 'downstream_rq_total'] as const
/** The first Istio release that injects native sidecars by default (ENABLE_NATIVE_SIDECARS on). */
export const ISTIO_NATIVE_DEFAULT: IstioVersion = { major: 1, minor: 27 }
const NAMESPACE_INJECTION = 'istio-injection'
const ISTIO_REVISION = 'istio.io/rev'

/** Namespaces in the input whose labels turn Istio injection on, by name. */
export type InjectingNamespaces = Map<string, ManifestObject>

export function injectingNamespaces (objects: ManifestObject[]): { injecting: InjectingNamespaces, count: number, ambient: InjectingNamespaces } {
  const injecting: InjectingNamespaces = new Map()
  const ambient: InjectingNamespaces = new Map()
  let count = 0
  for (const o of objects) {
    if (o.kind !== 'Namespace') continue
    count++
    const metadata = isRecord(o.value.metadata) ? o.value.metadata : {}
    const labels = isRecord(metadata.labels) ? metadata.labels : {}
    if (labels[ISTIO_DATAPLANE] === 'ambient') ambient.set(o.name, o)
    const label = labels[NAMESPACE_INJECTION]
    // istio-injection=disabled wins over a revision label, as in Istio's webhook selectors.
    if (label === 'enabled' || (label !== 'disabled' && typeof labels[ISTIO_REVISION] === 'string')) injecting.set(o.name, o)
  }
  return { injecting, count, ambient }
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

export interface IstioVersion { major: number, minor: number }

/** '1.27', '1.27.1', 'v1.28', '1-27' (a revision name), else undefined. */
export function parseIstioVersion (text: string): IstioVersion | undefined {
  const m = /^v?(\d+)[.-](\d+)(?:[.-]\d+)?(?:[-.].*)?$/.exec(text.trim())
  if (m === null) return undefined
  return { major: Number(m[1]), minor: Number(m[2]) }
}

export function versionAtLeast (v: IstioVersion, min: IstioVersion): boolean {
  return v.major > min.major || (v.major === min.major && v.minor >= min.minor)
}

/**
 * Which Istio the pod meets, from the manifest itself: the injector's output
 * (an istio-proxy image tagged proxyv2:1.27.1) or a revision label named after
 * a release (istio.io/rev: 1-27), on the pod or its Namespace.
 */
export function istioVersionOf (pod: PodTemplate, namespaces: { injecting: InjectingNamespaces, count: number }): { version: IstioVersion, why: string } | undefined {
  for (const c of [...pod.initContainers, ...pod.containers]) {
    const image = typeof c.value.image === 'string' ? c.value.image : ''
    const m = /(?:^|\/)proxyv2:([^@\s]+)/.exec(image)
    const v = m === null ? undefined : parseIstioVersion(m[1]!)
    if (v !== undefined) return { version: v, why: `image ${image}` }
  }
  // The injector's record on an injected pod: {"revision":"1-27",...}.
  const status = pod.annotations['sidecar.istio.io/status']
  if (status !== undefined && status.length < 10_000) {
    const m = /"revision"\s*:\s*"([^"]+)"/.exec(status)
    const v = m === null ? undefined : parseIstioVersion(m[1]!)
    if (v !== undefined) return { version: v, why: `annotation sidecar.istio.io/status revision ${m![1]!}` }
  }
  const rev = pod.labels[ISTIO_REVISION]
  const fromRev = rev === undefined ? undefined : parseIstioVersion(rev)
  if (fromRev !== undefined) return { version: fromRev, why: `label ${ISTIO_REVISION}: ${rev}` }
  const name = pod.object.namespace ?? (namespaces.count === 1 ? [...namespaces.injecting.keys()][0] : undefined)
  const ns = name === undefined ? undefined : namespaces.injecting.get(name)
  const nsRev = ns === undefined ? undefined : (isRecord(ns.value.metadata) && isRecord(ns.value.metadata.labels) ? ns.value.metadata.labels[ISTIO_REVISION] : undefined)
  const fromNs = typeof nsRev === 'string' ? parseIstioVersion(nsRev) : undefined
  if (fromNs !== undefined) return { version: fromNs, why: `Namespace/${ns!.name} label ${ISTIO_REVISION}: ${String(nsRev)}` }
  return undefined
}

export interface IstioMode {
  /** 'native': istio-proxy is an init container with restartPolicy: Always, stopped after the app. */
  mode: 'classic' | 'native'
  why: string
}

/**
 * Classic or native injection: the pod's sidecar.istio.io/nativeSidecar, else a
 * native istio-proxy it already carries, else the Istio version (--istio-version,
 * else read from the manifest): native by default from 1.27. Unknown: classic
 * (the older default), and the finding says how to tell.
 */
export function istioMode (pod: PodTemplate, namespaces: { injecting: InjectingNamespaces, count: number }, flagVersion: IstioVersion | undefined): IstioMode {
  const own = pod.annotations[ISTIO_NATIVE]
  if (own === 'true') return { mode: 'native', why: `annotation ${ISTIO_NATIVE}: "true"` }
  if (own === 'false') return { mode: 'classic', why: `annotation ${ISTIO_NATIVE}: "false"` }
  if (pod.initContainers.some((c) => c.native && proxyKind(c) === 'istio')) return { mode: 'native', why: 'istio-proxy is an init container with restartPolicy: Always' }
  const found = flagVersion !== undefined ? { version: flagVersion, why: '--istio-version' } : istioVersionOf(pod, namespaces)
  if (found === undefined) return { mode: 'classic', why: 'Istio version unknown (give --istio-version; native by default from 1.27)' }
  const v = `${found.version.major}.${found.version.minor}`
  return versionAtLeast(found.version, ISTIO_NATIVE_DEFAULT)
    ? { mode: 'native', why: `Istio ${v} (${found.why}) injects native sidecars by default` }
    : { mode: 'classic', why: `Istio ${v} (${found.why}) injects a regular container` }
}

/** Ambient mode: the pod's label, else its Namespace's (pod opt-out: istio.io/dataplane-mode: none). */
export function ambientOf (pod: PodTemplate, namespaces: { ambient: InjectingNamespaces, count: number }): { ambient: boolean, why: string, path?: Path } {
  const own = pod.labels[ISTIO_DATAPLANE]
  if (own === 'ambient') return { ambient: true, why: `label ${ISTIO_DATAPLANE}: ambient`, path: [...pod.metaPath, 'labels', ISTIO_DATAPLANE] }
  if (own !== undefined) return { ambient: false, why: '' }
  const name = pod.object.namespace ?? (namespaces.count === 1 ? [...namespaces.ambient.keys()][0] : undefined)
  const ns = name === undefined ? undefined : namespaces.ambient.get(name)
  return ns !== undefined ? { ambient: true, why: `Namespace/${ns.name} label ${ISTIO_DATAPLANE}: ambient` } : { ambient: false, why: '' }
}
