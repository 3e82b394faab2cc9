// Checks across objects: which Services, routes, budgets and balancers reach a
// workload's pods, and whether each of them fits the pod's window, longest
// request and warmup. Objects are linked by selector (Service, PDB) and by name
// (routes → Services, policies → routes, HPA → workload), within a namespace.
import { formatSeconds as sec } from '../args.ts'
import type { PropagationWindow } from '@lameduck/core'
import type { AppConfig } from './app-config.ts'
import type { CheckCode } from './catalog.ts'
import type { Report } from './checks.ts'
import { isRecord, type ManifestObject } from './manifest.ts'
import { get, type PodTemplate } from './pod.ts'

export interface WorkloadInfo {
  object: ManifestObject
  pod: PodTemplate
  window: PropagationWindow
  maxRequestMs: number
  config: AppConfig
  report: Report
}

/** Envoy Gateway's EnvoyProxy.spec.shutdown defaults (api/v1alpha1/envoyproxy_types.go). */
const EG_DRAIN_TIMEOUT_MS = 60_000
const EG_MIN_DRAIN_MS = 10_000
/** The AWS target group default deregistration_delay.timeout_seconds. */
const AWS_DEFAULT_DEREGISTRATION_S = 300
const AWS_SERVICE_ATTRS = 'service.beta.kubernetes.io/aws-load-balancer-target-group-attributes'
const ALB_ATTRS = 'alb.ingress.kubernetes.io/target-group-attributes'
const GKE_BACKEND_CONFIG = 'cloud.google.com/backend-config'

type Mark = (code: CheckCode) => void

export function checkCluster (objects: ManifestObject[], workloads: WorkloadInfo[], reportFor: (o: ManifestObject) => Report, mark: Mark): void {
  const services = objects.filter((o) => o.kind === 'Service')
  const selected = (svc: ManifestObject): WorkloadInfo[] => {
    const selector = get(svc.value, ['spec', 'selector'])
    if (!isRecord(selector) || Object.keys(selector).length === 0) return []
    return workloads.filter((w) => sameNs(w.object, svc) && Object.entries(selector).every(([k, v]) => w.pod.labels[k] === String(v)))
  }
  const serviceNamed = (name: unknown, ns: ManifestObject): ManifestObject | undefined =>
    services.find((s) => s.name === name && sameNs(s, ns))

  readinessTopology(objects, workloads, services, selected, mark)
  budgets(objects, workloads, reportFor, mark)
  loadBalancers(objects, services, selected, reportFor, mark)
  routes(objects, selected, serviceNamed, reportFor, mark)
  envoyGateway(objects, workloads, reportFor, mark)
  warmups(objects, services, selected, serviceNamed, reportFor, mark)
  for (const o of objects) {
    if (o.kind !== 'Ingress') continue
    const className = String(get(o.value, ['spec', 'ingressClassName']) ?? get(o.value, ['metadata', 'annotations', 'kubernetes.io/ingress.class']) ?? '')
    const annotations = get(o.value, ['metadata', 'annotations'])
    const nginx = /nginx/i.test(className) || (isRecord(annotations) && Object.keys(annotations).some((k) => k.startsWith('nginx.ingress.kubernetes.io/')))
    mark('ingress-nginx-retired')
    if (!nginx) continue
    reportFor(o)('info', 'ingress-nginx-retired', get(o.value, ['spec', 'ingressClassName']) !== undefined ? ['spec', 'ingressClassName'] : ['metadata'], {
      message: 'ingress-nginx was retired in March 2026 (no more releases or security fixes): its endpoint sync and keep-alive reuse stay as the nginx-pod-upstream finding describes, and nothing will change them',
      fix: 'plan the move to a Gateway API implementation (ingress2gateway converts the Ingress); `lameduck doctor` reads HTTPRoute and Envoy Gateway\'s settings'
    })
  }
}

function sameNs (a: ManifestObject, b: ManifestObject): boolean {
  return (a.namespace ?? '') === (b.namespace ?? '')
}

function replicasOf (w: WorkloadInfo, objects: ManifestObject[]): number | undefined {
  if (w.object.kind !== 'Deployment' && w.object.kind !== 'StatefulSet' && w.object.kind !== 'ReplicaSet') return undefined
  const hpa = objects.find((o) => o.kind === 'HorizontalPodAutoscaler' && sameNs(o, w.object) && get(o.value, ['spec', 'scaleTargetRef', 'name']) === w.object.name)
  if (hpa !== undefined) {
    const min = get(hpa.value, ['spec', 'minReplicas'])
    return typeof min === 'number' ? min : 1
  }
  // Unset replicas: often an HPA outside the input (helm charts); not judged.
  const r = get(w.object.value, ['spec', 'replicas'])
  return typeof r === 'number' ? r : undefined
}

function readinessTopology (objects: ManifestObject[], workloads: WorkloadInfo[], services: ManifestObject[], selected: (s: ManifestObject) => WorkloadInfo[], mark: Mark): void {
  for (const w of workloads) {
    mark('readiness-topology')
    if (w.config.readiness !== 'fail') continue
    const replicas = replicasOf(w, objects)
    // externalTrafficPolicy: Local is etp-local's finding (its fix names 'serve'); here only in words.
    const local = services.find((s) => get(s.value, ['spec', 'externalTrafficPolicy']) === 'Local' && selected(s).includes(w))
    if (replicas !== 1) continue
    const topology = `a single replica${w.object.kind === 'StatefulSet' ? ' (StatefulSet)' : ''}: when it is evicted or deleted there is no other ready endpoint${local !== undefined ? ` (and Service/${local.name} has externalTrafficPolicy: Local)` : ''}`
    w.report('warning', 'readiness-topology', ['spec', 'replicas'], {
      message: `readinessWhileDraining is 'fail' (${w.config.readinessSource}) with ${topology}. Kubernetes would keep routing to a terminating endpoint that still passes readiness (serving, KEP-1669), but 'fail' opts the pod out, so requests in the ${sec(w.window.totalMs)} window fail instead of being served`,
      tradeoff: '\'serve\' keeps /health/ready 200 until the drain is over, so data planes that only drop not-ready endpoints (and a manual /offline) keep sending for the whole window; \'fail\' moves traffic away at once wherever another ready pod exists',
      fix: 'set the app\'s readinessWhileDraining: \'serve\' (annotation lameduck.dev/readiness-while-draining: "serve"), or run more than one replica'
    })
  }
}

function budgets (objects: ManifestObject[], workloads: WorkloadInfo[], reportFor: (o: ManifestObject) => Report, mark: Mark): void {
  const pdbs = objects.filter((o) => o.kind === 'PodDisruptionBudget')
  for (const w of workloads) {
    const replicas = replicasOf(w, objects)
    if (replicas === undefined) continue
    mark('pdb-missing')
    const pdb = pdbs.find((p) => {
      if (!sameNs(p, w.object)) return false
      const match = get(p.value, ['spec', 'selector', 'matchLabels'])
      const expr = get(p.value, ['spec', 'selector', 'matchExpressions'])
      if (!isRecord(match)) return Array.isArray(expr) && expr.length > 0
      return Object.entries(match).every(([k, v]) => w.pod.labels[k] === String(v))
    })
    if (pdb === undefined) {
      if (replicas > 1) {
        w.report('warning', 'pdb-missing', ['metadata'], {
          message: `${replicas} replicas and no PodDisruptionBudget selects them: a node drain or upgrade may evict several at once, each draining for its ${sec(w.window.totalMs)} window, and the replicas left must carry all traffic (or none is left)`,
          fix: 'add a PodDisruptionBudget with maxUnavailable: 1 and this pod template\'s labels (`lameduck plan --resources` prints one)'
        })
      }
      continue
    }
    mark('pdb-too-tight')
    const maxU = get(pdb.value, ['spec', 'maxUnavailable'])
    const minA = get(pdb.value, ['spec', 'minAvailable'])
    const pct = (v: unknown): number | undefined => typeof v === 'string' && /^\d+%$/.test(v) ? Math.floor(replicas * Number(v.slice(0, -1)) / 100) : undefined
    const allowed = maxU !== undefined
      ? (typeof maxU === 'number' ? maxU : (pct(maxU) ?? 1))
      : minA !== undefined ? replicas - (typeof minA === 'number' ? minA : Math.ceil(replicas * Number(String(minA).replace('%', '')) / 100)) : 1
    if (allowed > 0) continue
    reportFor(pdb)('warning', 'pdb-too-tight', maxU !== undefined ? ['spec', 'maxUnavailable'] : ['spec', 'minAvailable'], {
      message: `PodDisruptionBudget/${pdb.name} allows no eviction of ${w.object.kind}/${w.object.name} (${replicas} replica${replicas === 1 ? '' : 's'}): node drains and upgrades block on it until someone deletes the pod by force, which skips the drain`,
      fix: 'use maxUnavailable: 1 (evictions then go one at a time, each with its full drain), and run at least two replicas'
    })
  }
}

function loadBalancers (objects: ManifestObject[], services: ManifestObject[], selected: (s: ManifestObject) => WorkloadInfo[], reportFor: (o: ManifestObject) => Report, mark: Mark): void {
  const check = (o: ManifestObject, path: string[], delayS: number, what: string, targets: WorkloadInfo[]): void => {
    for (const w of targets) {
      if (delayS * 1000 <= w.window.totalMs) continue
      reportFor(o)('warning', 'lb-deregistration-delay', path, {
        message: `${what} is ${delayS} s, longer than the ${sec(w.window.totalMs)} window of ${w.object.kind}/${w.object.name}: after deregistration the load balancer keeps using the connections it holds to the pod for up to ${delayS} s, but the pod stops once its window has passed, so requests on those connections are reset`,
        fix: `lower it to at most ${Math.floor(w.window.totalMs / 1000)} s, or count it in the window (endpointLagMs ≥ ${delayS * 1000} in lameduck.dev/windows and the app's windows)`
      })
      return
    }
  }
  for (const svc of services) {
    const annotations = get(svc.value, ['metadata', 'annotations'])
    if (!isRecord(annotations)) continue
    const attrs = annotations[AWS_SERVICE_ATTRS]
    if (typeof attrs === 'string') {
      mark('lb-deregistration-delay')
      const m = /deregistration_delay\.timeout_seconds=(\d+)/.exec(attrs)
      check(svc, ['metadata', 'annotations', AWS_SERVICE_ATTRS], m ? Number(m[1]) : AWS_DEFAULT_DEREGISTRATION_S, `the target group's deregistration_delay${m ? '' : ' (AWS default)'}`, selected(svc))
    }
    const bc = annotations[GKE_BACKEND_CONFIG]
    if (typeof bc === 'string') {
      mark('lb-deregistration-delay')
      for (const config of objects.filter((o) => o.kind === 'BackendConfig' && sameNs(o, svc) && bc.includes(`"${o.name}"`))) {
        const s = get(config.value, ['spec', 'connectionDraining', 'drainingTimeoutSec'])
        if (typeof s === 'number') check(config, ['spec', 'connectionDraining', 'drainingTimeoutSec'], s, 'the GKE backend service\'s connection draining timeout (drainingTimeoutSec)', selected(svc))
      }
    }
  }
  for (const ing of objects.filter((o) => o.kind === 'Ingress')) {
    const className = String(get(ing.value, ['spec', 'ingressClassName']) ?? '')
    const attrs = get(ing.value, ['metadata', 'annotations', ALB_ATTRS])
    if (className !== 'alb' && typeof attrs !== 'string') continue
    mark('lb-deregistration-delay')
    const m = typeof attrs === 'string' ? /deregistration_delay\.timeout_seconds=(\d+)/.exec(attrs) : null
    const backends = JSON.stringify(get(ing.value, ['spec']) ?? {})
    const targets = services.filter((s) => sameNs(s, ing) && backends.includes(`"name":${JSON.stringify(s.name)}`)).flatMap(selected)
    check(ing, typeof attrs === 'string' ? ['metadata', 'annotations', ALB_ATTRS] : ['spec', 'ingressClassName'], m ? Number(m[1]) : AWS_DEFAULT_DEREGISTRATION_S, `the ALB target group's deregistration_delay${m ? '' : ' (AWS default)'}`, targets)
  }
}

function routes (objects: ManifestObject[], selected: (s: ManifestObject) => WorkloadInfo[], serviceNamed: (n: unknown, o: ManifestObject) => ManifestObject | undefined, reportFor: (o: ManifestObject) => Report, mark: Mark): void {
  for (const route of objects.filter((o) => o.kind === 'HTTPRoute' || o.kind === 'GRPCRoute')) {
    mark('route-no-endpoint-lag')
    const rules = get(route.value, ['spec', 'rules'])
    if (!Array.isArray(rules)) continue
    rules.forEach((rule, i) => {
      const refs = isRecord(rule) && Array.isArray(rule.backendRefs) ? rule.backendRefs : []
      refs.forEach((ref, j) => {
        if (!isRecord(ref) || (ref.kind !== undefined && ref.kind !== 'Service')) return
        const svc = serviceNamed(ref.name, route)
        if (svc === undefined) return
        for (const w of selected(svc)) {
          if (w.window.parts.endpointLagMs > 0) continue
          reportFor(route)('warning', 'route-no-endpoint-lag', ['spec', 'rules', i, 'backendRefs', j], {
            message: `${route.kind}/${route.name} sends to Service/${svc.name}, whose pods (${w.object.kind}/${w.object.name}) have a window with no endpoint term (${w.window.preset}): the gateway balances over the EndpointSlices itself and keeps sending to a terminating pod until its own update lands, after the pod may have stopped`,
            fix: 'add the endpoint term to the window (endpointLagMs, e.g. {"preset":"' + (w.window.preset === 'custom' ? 'none' : w.window.preset) + '","endpointLagMs":15000}) in lameduck.dev/windows and the app'
          })
          return
        }
      })
    })
  }
}

/** Gateway API Duration ('1h30m', '10s', '500ms') in ms; undefined if not one. */
export function durationMs (v: unknown): number | undefined {
  if (typeof v !== 'string' || !/^(\d+(h|m|s|ms))+$/.test(v)) return undefined
  let ms = 0
  for (const [, n, unit] of v.matchAll(/(\d+)(ms|h|m|s)/g)) ms += Number(n) * ({ h: 3_600_000, m: 60_000, s: 1000, ms: 1 } as Record<string, number>)[unit!]!
  return ms
}

function envoyGateway (objects: ManifestObject[], workloads: WorkloadInfo[], reportFor: (o: ManifestObject) => Report, mark: Mark): void {
  const longest = workloads.reduce<WorkloadInfo | undefined>((a, w) => (a === undefined || w.maxRequestMs > a.maxRequestMs ? w : a), undefined)
  for (const ep of objects.filter((o) => o.kind === 'EnvoyProxy')) {
    mark('envoy-gateway-shutdown')
    const drain = durationMs(get(ep.value, ['spec', 'shutdown', 'drainTimeout'])) ?? EG_DRAIN_TIMEOUT_MS
    const min = durationMs(get(ep.value, ['spec', 'shutdown', 'minDrainDuration'])) ?? EG_MIN_DRAIN_MS
    const at = (key: string): string[] => get(ep.value, ['spec', 'shutdown', key]) !== undefined ? ['spec', 'shutdown', key] : (get(ep.value, ['spec', 'shutdown']) !== undefined ? ['spec', 'shutdown'] : ['spec'])
    if (longest !== undefined && drain < longest.maxRequestMs) {
      reportFor(ep)('warning', 'envoy-gateway-shutdown', at('drainTimeout'), {
        message: `EnvoyProxy/${ep.name}: shutdown.drainTimeout is ${sec(drain)}, shorter than the ${sec(longest.maxRequestMs)} longest request of ${longest.object.kind}/${longest.object.name} behind it: when a gateway pod rolls, its Envoy is stopped with those requests still in flight`,
        fix: `set spec.shutdown.drainTimeout to at least ${Math.ceil(longest.maxRequestMs / 1000) + 5}s (and the gateway pods' terminationGracePeriodSeconds above it)`
      })
    }
    if (min < 15_000) {
      reportFor(ep)('warning', 'envoy-gateway-shutdown', at('minDrainDuration'), {
        message: `EnvoyProxy/${ep.name}: shutdown.minDrainDuration is ${sec(min)}${get(ep.value, ['spec', 'shutdown', 'minDrainDuration']) === undefined ? ' (the default)' : ''}: the gateway pod may stop after that long, while the load balancer in front of it can still send for the endpoint propagation window (15 s in lameduck's 'kubernetes' preset)`,
        fix: 'set spec.shutdown.minDrainDuration: 15s or more (the endpoint term of the window, plus the cloud load balancer\'s own lag)'
      })
    }
    if (drain < min) {
      reportFor(ep)('warning', 'envoy-gateway-shutdown', at('drainTimeout'), {
        message: `EnvoyProxy/${ep.name}: drainTimeout ${sec(drain)} is shorter than minDrainDuration ${sec(min)}: the drain is cut before its minimum`,
        fix: 'make drainTimeout at least minDrainDuration plus the longest request'
      })
    }
  }
}

function warmups (objects: ManifestObject[], services: ManifestObject[], selected: (s: ManifestObject) => WorkloadInfo[], serviceNamed: (n: unknown, o: ManifestObject) => ManifestObject | undefined, reportFor: (o: ManifestObject) => Report, mark: Mark): void {
  const compare = (o: ManifestObject, path: Array<string | number>, raw: unknown, targets: WorkloadInfo[], what: string): void => {
    const ms = durationMs(raw)
    for (const w of targets) {
      if (w.config.warmupMs === 0 || ms === undefined || ms === w.config.warmupMs) continue
      reportFor(o)('warning', 'warmup-mismatch', path, {
        message: `${what} is ${sec(ms)}, but ${w.object.kind}/${w.object.name} warms up for ${sec(w.config.warmupMs)} (annotation lameduck.dev/warmup-ms): ${ms < w.config.warmupMs ? 'this balancer gives a new pod its full share before it is warm' : 'this balancer holds a warm pod back'}, unlike the app's other consumers`,
        fix: `set it to ${Math.ceil(w.config.warmupMs / 1000)}s (\`lameduck plan --warmup-ms ${w.config.warmupMs} --resources\` prints it)`
      })
      return
    }
  }
  for (const dr of objects.filter((o) => o.kind === 'DestinationRule')) {
    mark('warmup-mismatch')
    const host = String(get(dr.value, ['spec', 'host']) ?? '').split('.')[0]
    const svc = services.find((s) => s.name === host)
    if (svc === undefined) continue
    compare(dr, ['spec', 'trafficPolicy', 'loadBalancer', 'warmupDurationSecs'], get(dr.value, ['spec', 'trafficPolicy', 'loadBalancer', 'warmupDurationSecs']), selected(svc), `DestinationRule/${dr.name} warmupDurationSecs`)
  }
  for (const btp of objects.filter((o) => o.kind === 'BackendTrafficPolicy')) {
    mark('warmup-mismatch')
    const refs = get(btp.value, ['spec', 'targetRefs'])
    const targets: WorkloadInfo[] = []
    for (const ref of Array.isArray(refs) ? refs : []) {
      if (!isRecord(ref)) continue
      const routes = objects.filter((o) => (o.kind === 'HTTPRoute' || o.kind === 'GRPCRoute') && o.kind === ref.kind && o.name === ref.name && sameNs(o, btp))
      for (const r of routes) {
        const names = JSON.stringify(get(r.value, ['spec', 'rules']) ?? [])
        for (const s of services) if (sameNs(s, r) && names.includes(`"name":${JSON.stringify(s.name)}`)) targets.push(...selected(s))
      }
      const svc = ref.kind === 'Service' ? serviceNamed(ref.name, btp) : undefined
      if (svc !== undefined) targets.push(...selected(svc))
    }
    compare(btp, ['spec', 'loadBalancer', 'slowStart', 'window'], get(btp.value, ['spec', 'loadBalancer', 'slowStart', 'window']), targets, `BackendTrafficPolicy/${btp.name} slowStart.window`)
  }
}
