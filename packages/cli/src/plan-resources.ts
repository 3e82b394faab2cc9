// `lameduck plan --resources`: the objects beside the workload that carry the
// same numbers: a PodDisruptionBudget, and the app's warmup for every balancer
// in front of it (Istio DestinationRule, Envoy Gateway BackendTrafficPolicy,
// an APISIX upstream fragment), so all of them ramp from one warmupMs.
import { formatSeconds as sec } from './args.ts'
import type { Plan } from './plan.ts'

export function renderResources (plan: Plan): string {
  const out: string[] = []
  const line = (s = ''): void => { out.push(s) }
  const name = plan.name
  line('---')
  line('# Voluntary evictions (node drains, upgrades) take one pod at a time: each one runs its')
  line(`# whole drain (the ${sec(plan.window.totalMs)} window) while the others serve. maxUnavailable: 1 never blocks`)
  line('# a drain the way minAvailable equal to the replicas does.')
  line('apiVersion: policy/v1')
  line('kind: PodDisruptionBudget')
  line('metadata:')
  line(`  name: ${name}`)
  line('spec:')
  line('  maxUnavailable: 1')
  line('  selector:')
  line('    matchLabels:')
  line(`      app: ${name}`)
  const w = plan.warmup
  if (w === null) return out.join('\n') + '\n'
  line('---')
  line(`# Istio: Envoy's slow start ramps a new endpoint over the app's ${sec(w.ms)} warmup`)
  line('# (ROUND_ROBIN and LEAST_REQUEST only).')
  line('apiVersion: networking.istio.io/v1')
  line('kind: DestinationRule')
  line('metadata:')
  line(`  name: ${name}`)
  line('spec:')
  line(`  host: ${name}`)
  line('  trafficPolicy:')
  line('    loadBalancer:')
  line('      simple: LEAST_REQUEST')
  line(`      warmupDurationSecs: ${w.seconds}s`)
  line('---')
  line('# Envoy Gateway: the same ramp for routes through the gateway.')
  line('apiVersion: gateway.envoyproxy.io/v1alpha1')
  line('kind: BackendTrafficPolicy')
  line('metadata:')
  line(`  name: ${name}`)
  line('spec:')
  line('  targetRefs:')
  line('    - group: gateway.networking.k8s.io')
  line('      kind: HTTPRoute')
  line(`      name: ${name}`)
  line('  loadBalancer:')
  line('    type: RoundRobin')
  line('    slowStart:')
  line(`      window: ${w.seconds}s`)
  line('#')
  line('# APISIX (Admin API, upstream object; apache/apisix#12991): merge into the upstream of the route')
  line(`# # PATCH /apisix/admin/upstreams/${name}`)
  line(`# ${JSON.stringify(apisixUpstream(plan))}`)
  return out.join('\n') + '\n'
}

/** The APISIX upstream fragment: warm_up_conf from the same warmup. */
export function apisixUpstream (plan: Plan): { type: string, warm_up_conf: { slow_start_time_seconds: number, min_weight_percent: number, aggression: number } } {
  return { type: 'roundrobin', warm_up_conf: { slow_start_time_seconds: plan.warmup?.seconds ?? 0, min_weight_percent: 1, aggression: 1 } }
}
