// `lameduck plan --observed-window --readiness-gate`: what each @lameduck/kubernetes option needs
// from the pod and the API: the pod's own name and IP from the downward API, the readiness gate
// on the pod spec, and a ServiceAccount with a Role granting exactly those calls.

export const REGISTERED_CONDITION = 'lameduck.dev/registered'
/** @lameduck/kubernetes observedWindow()'s dataPlaneLagMs default. */
export const DEFAULT_DATA_PLANE_LAG_MS = 5_000

export interface RbacRule { apiGroups: string[], resources: string[], verbs: string[], why: string }

export interface KubernetesAccess {
  /** observedWindow(): the endpoint term from this pod's own EndpointSlice endpoint. */
  observedWindow: { dataPlaneLagMs: number } | null
  /** readinessGate(): the pod condition the Deployment's readinessGates wait for. */
  readinessGate: { conditionType: string, warmupFraction: number } | null
  /** The ServiceAccount (and Role, RoleBinding) name. */
  serviceAccount: string
  /** The downward-API env the options read (POD_NAME, POD_IP). */
  env: Array<{ name: string, fieldPath: string }>
  rules: RbacRule[]
}

export interface KubernetesAccessInput {
  observedWindow?: { dataPlaneLagMs?: number | undefined } | undefined
  readinessGate?: { warmupFraction?: number | undefined } | undefined
  serviceAccount?: string | undefined
  name: string
}

export function kubernetesAccess (input: KubernetesAccessInput): KubernetesAccess | null {
  if (input.observedWindow === undefined && input.readinessGate === undefined) return null
  const rules: RbacRule[] = []
  const env = [{ name: 'POD_NAME', fieldPath: 'metadata.name' }]
  if (input.observedWindow !== undefined) {
    env.push({ name: 'POD_IP', fieldPath: 'status.podIP' })
    rules.push({ apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'], why: "observedWindow(): watch this pod's own endpoint" })
  }
  if (input.readinessGate !== undefined) {
    rules.push({ apiGroups: [''], resources: ['pods/status'], verbs: ['patch'], why: `readinessGate(): set the ${REGISTERED_CONDITION} condition` })
  }
  return {
    observedWindow: input.observedWindow === undefined ? null : { dataPlaneLagMs: input.observedWindow.dataPlaneLagMs ?? DEFAULT_DATA_PLANE_LAG_MS },
    readinessGate: input.readinessGate === undefined ? null : { conditionType: REGISTERED_CONDITION, warmupFraction: input.readinessGate.warmupFraction ?? 0 },
    serviceAccount: input.serviceAccount ?? `${input.name}-lameduck`,
    env,
    rules
  }
}

type Line = (s?: string) => void

/** The header lines: the options to pass, and what each one does to the window. */
export function accessHeader (k: KubernetesAccess, endpointLagMs: number, line: Line): void {
  line('# @lameduck/kubernetes options:')
  if (k.observedWindow !== null) {
    line(`#   windowEvidence: observedWindow({ dataPlaneLagMs: ${k.observedWindow.dataPlaneLagMs} }),`)
    line(`#     the endpoint term (endpointLagMs ${endpointLagMs / 1000} s above) ends when this pod's endpoint is seen`)
    line(`#     terminating, removed or not ready in its EndpointSlice, + ${k.observedWindow.dataPlaneLagMs / 1000} s for kube-proxy and ingress sync;`)
    line('#     without API access or the Role below it counts the preset (and says so once)')
  }
  if (k.readinessGate !== null) {
    const w = k.readinessGate.warmupFraction
    line(`#   observers: [readinessGate(${w > 0 ? `{ warmupFraction: ${w} }` : ''})],`)
    line(`#     ${k.readinessGate.conditionType} turns True once the registry confirmed the registration${w > 0 ? ` and ${Math.round(w * 100)}% of the warmup passed` : ''}:`)
    line('#     the rollout waits for it (readinessGates below); /health/ready is not slowed')
  }
  line('#')
}

/** spec.template.spec: the service account, and the readiness gate. */
export function accessPodSpec (k: KubernetesAccess, line: Line): void {
  line(`      serviceAccountName: ${k.serviceAccount}  # the Role below`)
  if (k.readinessGate === null) return
  line('      readinessGates:')
  line('        # the pod counts as Ready only once lameduck set this (registered with the registry)')
  line(`        - conditionType: ${k.readinessGate.conditionType}`)
}

/** The app container's env from the downward API. */
export function accessEnv (k: KubernetesAccess, line: Line): void {
  line('          env:')
  line('            # the pod\'s own name and IP, as @lameduck/kubernetes reads them')
  for (const e of k.env) {
    line(`            - name: ${e.name}`)
    line('              valueFrom:')
    line('                fieldRef:')
    line(`                  fieldPath: ${e.fieldPath}`)
  }
}

/** The ServiceAccount, Role and RoleBinding, in the workload's namespace. */
export function renderAccess (k: KubernetesAccess): string {
  const out: string[] = []
  const line: Line = (s = '') => { out.push(s) }
  const name = k.serviceAccount
  line('---')
  line('apiVersion: v1')
  line('kind: ServiceAccount')
  line('metadata:')
  line(`  name: ${name}`)
  line('---')
  line('# Namespaced, and no more than the options above call. RBAC cannot name the pod itself')
  line('# (its name is made at creation), so pods/status: patch covers every pod of the namespace.')
  line('apiVersion: rbac.authorization.k8s.io/v1')
  line('kind: Role')
  line('metadata:')
  line(`  name: ${name}`)
  line('rules:')
  for (const r of k.rules) {
    line(`  # ${r.why}`)
    line(`  - apiGroups: [${r.apiGroups.map((g) => JSON.stringify(g)).join(', ')}]`)
    line(`    resources: [${r.resources.join(', ')}]`)
    line(`    verbs: [${r.verbs.join(', ')}]`)
  }
  line('---')
  line('apiVersion: rbac.authorization.k8s.io/v1')
  line('kind: RoleBinding')
  line('metadata:')
  line(`  name: ${name}`)
  line('roleRef:')
  line('  apiGroup: rbac.authorization.k8s.io')
  line('  kind: Role')
  line(`  name: ${name}`)
  line('subjects:')
  line('  - kind: ServiceAccount')
  line(`    name: ${name}`)
  return out.join('\n') + '\n'
}
