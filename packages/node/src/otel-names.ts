// The names lameduck's OpenTelemetry output uses. OpenTelemetry's semantic
// conventions have no lifecycle or drain metrics, so these follow its naming
// rules (a `lameduck.` namespace, dots between components, UCUM units, `.duration`
// histograms in seconds, no `_total`); the Kubernetes and service attributes are
// the conventions' own names.

export const SCOPE = '@lameduck/node'

export const METRIC = {
  /** 1 for the current lifecycle state, 0 for the others (attribute `lameduck.state`). */
  state: 'lameduck.lifecycle.state',
  /** Requests being served now (read at collection: nothing is touched per request). */
  active: 'lameduck.server.active_requests',
  /** Requests served while draining, over every drain (cumulative). */
  whileDraining: 'lameduck.drain.requests',
  /** Requests a bound left in flight (maxRequestMs at the end of a drain, or a drain cut short). */
  forcedCloses: 'lameduck.drain.forced_closes',
  /** Deregistration calls sent, by how the drain's deregistration ended. */
  deregistrationAttempts: 'lameduck.deregistration.attempts',
  /** Each offline sequence's duration, by outcome. */
  offlineDuration: 'lameduck.offline.duration'
} as const

export const ATTR = {
  state: 'lameduck.state',
  outcome: 'lameduck.offline.outcome',
  reason: 'lameduck.reason',
  bound: 'lameduck.bound',
  deregistration: 'lameduck.deregistration.state',
  instanceId: 'lameduck.instance.id',
  service: 'lameduck.service',
  phase: 'lameduck.drain.phase',
  previous: 'lameduck.drain.previous_phase'
} as const

/** The span names: one per offline and per online sequence. */
export const SPAN = { offline: 'lameduck.offline', online: 'lameduck.online' } as const

/** The conventions' Kubernetes resource attributes, from the Downward API variables a pod spec sets. */
export const KUBERNETES_ENV: ReadonlyArray<readonly [attribute: string, variable: string]> = [
  ['k8s.pod.name', 'POD_NAME'],
  ['k8s.namespace.name', 'POD_NAMESPACE'],
  ['k8s.pod.uid', 'POD_UID'],
  ['k8s.node.name', 'NODE_NAME'],
  ['k8s.container.name', 'CONTAINER_NAME']
]

export const SERVICE_INSTANCE_ID = 'service.instance.id'

/**
 * The Kubernetes attributes whose variables are set (POD_NAME -> k8s.pod.name,
 * POD_NAMESPACE -> k8s.namespace.name, POD_UID, NODE_NAME, CONTAINER_NAME).
 */
export function kubernetesAttributes (env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [attribute, variable] of KUBERNETES_ENV) {
    const value = env[variable]
    if (value !== undefined && value.trim() !== '') out[attribute] = value.trim()
  }
  return out
}

/**
 * Resource attributes for the app's SDK (`resourceFromAttributes(lameduckResourceAttributes())`):
 * the Kubernetes attributes that are set, and `service.instance.id` -- the one given,
 * else `<namespace>.<pod>[.<container>]` (the conventions' recipe for Kubernetes).
 * A library cannot change the SDK's resource; the app builds it.
 */
export function lameduckResourceAttributes (options: { instanceId?: string, env?: NodeJS.ProcessEnv } = {}): Record<string, string> {
  const k8s = kubernetesAttributes(options.env)
  const ns = k8s['k8s.namespace.name']
  const pod = k8s['k8s.pod.name']
  const container = k8s['k8s.container.name']
  const derived = ns !== undefined && pod !== undefined ? [ns, pod, container].filter((p) => p !== undefined).join('.') : undefined
  const id = options.instanceId ?? derived
  return id === undefined ? k8s : { ...k8s, [SERVICE_INSTANCE_ID]: id }
}
