// What the doctor needs to know about a pod: where its template is, which
// containers are the app and which are proxies, and what their hooks do.
import { scanCommand } from './command-scan.ts'
import { isRecord, type ManifestObject, type Path } from './manifest.ts'

const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'ReplicationController'])

export interface Container {
  name: string
  /** Path of the container inside the object. */
  path: Path
  value: Record<string, unknown>
  /** initContainers with restartPolicy: Always (KEP-753): started before and stopped after the app. */
  native: boolean
}

export interface PodTemplate {
  object: ManifestObject
  specPath: Path
  metaPath: Path
  spec: Record<string, unknown>
  annotations: Record<string, string>
  labels: Record<string, string>
  /** Annotations of the workload itself (Deployment metadata), for lameduck.dev/* fallbacks. */
  workloadAnnotations: Record<string, string>
  containers: Container[]
  initContainers: Container[]
}

export function podTemplateOf (object: ManifestObject): PodTemplate | undefined {
  let specPath: Path
  let metaPath: Path
  if (object.kind === 'Pod') {
    specPath = ['spec']
    metaPath = ['metadata']
  } else if (WORKLOAD_KINDS.has(object.kind)) {
    specPath = ['spec', 'template', 'spec']
    metaPath = ['spec', 'template', 'metadata']
  } else {
    return undefined
  }
  const spec = get(object.value, specPath)
  if (!isRecord(spec)) return undefined
  const meta = get(object.value, metaPath)
  const containers = (key: 'containers' | 'initContainers'): Container[] => {
    const list = spec[key]
    if (!Array.isArray(list)) return []
    return list.flatMap((c, i) => isRecord(c)
      ? [{ name: typeof c.name === 'string' ? c.name : `#${i}`, path: [...specPath, key, i], value: c, native: key === 'initContainers' && c.restartPolicy === 'Always' }]
      : [])
  }
  return {
    object,
    specPath,
    metaPath,
    spec,
    annotations: strings(isRecord(meta) ? meta.annotations : undefined),
    labels: strings(isRecord(meta) ? meta.labels : undefined),
    workloadAnnotations: object.kind === 'Pod' ? {} : strings(isRecord(object.value.metadata) ? object.value.metadata.annotations : undefined),
    containers: containers('containers'),
    initContainers: containers('initContainers')
  }
}

export type ProxyKind = 'istio' | 'envoy'

/** Istio's istio-proxy or a plain Envoy container, by name or image. */
export function proxyKind (c: Container): ProxyKind | undefined {
  const image = typeof c.value.image === 'string' ? c.value.image : ''
  if (c.name === 'istio-proxy' || /(^|\/)proxyv2([:@]|$)/.test(image)) return 'istio'
  if (/(^|[-_])envoy([-_]|$)/.test(c.name) || /(^|\/)envoy(-[a-z]+)?([:@]|$)/.test(image) || image.includes('envoyproxy/')) return 'envoy'
  return undefined
}

export interface HookInfo {
  present: boolean
  /** The hook in one line, for messages. */
  text: string
  /** Calls the app's /offline: 'wait' blocks until offline (`lameduck prestop`, `?wait=true`). */
  offline: 'wait' | 'nowait' | null
  /** Total seconds of `sleep` (exec sleep, a shell script's sleeps, or the sleep action). */
  sleepSeconds: number | null
  /** `lameduck wait-drained`: a sidecar's hook that blocks until the app is offline. */
  waitDrained: boolean
}

const SHELLS = /(^|\/)(sh|bash|ash|dash|zsh)$/
const SHOWN_LIMIT = 200

export function describeHook (hook: unknown): HookInfo {
  const none: HookInfo = { present: false, text: '', offline: null, sleepSeconds: null, waitDrained: false }
  if (!isRecord(hook)) return none
  if (isRecord(hook.sleep)) {
    const seconds = Number(hook.sleep.seconds)
    return { ...none, present: true, text: `sleep: { seconds: ${hook.sleep.seconds} }`, sleepSeconds: Number.isFinite(seconds) ? seconds : 0 }
  }
  let text = ''
  if (isRecord(hook.exec) && Array.isArray(hook.exec.command)) {
    const argv = hook.exec.command.map(String)
    const c = argv.indexOf('-c')
    text = SHELLS.test(argv[0] ?? '') && c > 0 && argv[c + 1] !== undefined ? argv[c + 1]! : argv.join(' ')
  } else if (isRecord(hook.httpGet)) {
    text = `httpGet ${String(hook.httpGet.path ?? '/')}`
  } else {
    return { ...none, present: true, text: Object.keys(hook).join(', ') }
  }
  const facts = scanCommand(text)
  const offline: HookInfo['offline'] = facts.prestop || facts.offlineWait ? 'wait' : facts.offline ? 'nowait' : null
  return { present: true, text: shown(text), offline, sleepSeconds: facts.sleepSeconds, waitDrained: facts.waitDrained }
}

/** The hook for a message: one line, at most SHOWN_LIMIT characters. */
function shown (text: string): string {
  const head = text.length > SHOWN_LIMIT * 2 ? text.slice(0, SHOWN_LIMIT * 2) : text
  const line = head.replace(/\s+/g, ' ').trim()
  return line.length > SHOWN_LIMIT || head.length < text.length ? `${line.slice(0, SHOWN_LIMIT)}… (${text.length} characters)` : line
}

export function get (value: unknown, path: Path): unknown {
  let node = value
  for (const key of path) {
    if (Array.isArray(node) && typeof key === 'number') node = node[key]
    else if (isRecord(node) && typeof key === 'string') node = node[key]
    else return undefined
  }
  return node
}

function strings (v: unknown): Record<string, string> {
  if (!isRecord(v)) return {}
  const out: Record<string, string> = {}
  for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) out[k] = String(x)
  return out
}
