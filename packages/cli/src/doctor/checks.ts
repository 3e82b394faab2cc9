// The doctor's checks. Each finding names the object, the line, what goes wrong
// in a rolling deploy, and the fix; `error` is reserved for what loses traffic.
import { parse as parseYaml } from 'yaml'
import { formatSeconds as sec } from '../args.ts'
import { CLOSE_SLACK_MS, ISTIO_MINIMUM_DRAIN_S, graceSecondsFor, shutdownBudget, type Budget } from '../plan.ts'
import { isRecord, type ManifestObject, type Path } from './manifest.ts'
import { describeHook, get, podTemplateOf, proxyKind, type Container, type PodTemplate } from './pod.ts'
import { ambientOf, budgetSidecar, IDLE_RULE_SUFFIXES, injectingNamespaces, istioInjection, istioMode, ISTIO_NATIVE, ISTIO_STATS_SUFFIXES, type Injection, type IstioMode, type IstioVersion, type SidecarFlag } from './sidecar.ts'
import { appConfig, type AppConfig } from './app-config.ts'
import { checkPodExtras } from './checks-pod.ts'
import { checkGrpc, grpcReadinessFix } from './checks-grpc.ts'
import { checkCluster, type WorkloadInfo } from './checks-cluster.ts'
import { CHECKS, type CheckCode } from './catalog.ts'
import { ZTUNNEL_LAG_MS } from '../plan.ts'
import { chooseWindow, type WindowChoice, type WindowFlags } from './windows.ts'

export type Severity = 'error' | 'warning' | 'info'

export interface Finding {
  severity: Severity
  /** Stable id of the check, e.g. 'prestop-missing'. */
  code: string
  file: string
  line: number
  column: number
  /** Kind/name of the object. */
  object: string
  container?: string
  message: string
  fix: string
  /** For findings that are a choice, what the other side costs. */
  tradeoff?: string
}

export interface CheckedObject {
  file: string
  object: string
  line: number
  /** Objects the doctor does not read (unknown kinds, CRDs it does not know): why it skipped them. */
  note?: string
  window?: { totalMs: number, preset: string, source: string, maxRequestMs: number, maxRequestSource: string }
  /** The shutdown budget the pod was checked against (the same formula as \`lameduck plan\`). */
  budget?: { sidecar: 'istio' | 'native' | null, shutdownTimeoutMs: number, terminationGracePeriodSeconds: number, sidecarPhaseMs?: number }
  /** Istio data plane for this pod: 'classic' or 'native' sidecar, 'ambient', and why. */
  istio?: { mode: 'classic' | 'native' | 'ambient', why: string }
}

export const DEFAULT_GRACE_S = 30
export const CONTAINER_ANNOTATION = 'lameduck.dev/container'
const ISTIO_CONFIG = 'proxy.istio.io/config'
const SERVICE_UPSTREAM = 'nginx.ingress.kubernetes.io/service-upstream'

export type Report = (severity: Severity, code: string, path: Path, text: { message: string, fix: string, tradeoff?: string, container?: string }) => void

export interface DoctorFlags extends WindowFlags {
  sidecar?: SidecarFlag | undefined
  istioVersion?: IstioVersion | undefined
}

export interface CheckRun { code: CheckCode, severity: Severity, what: string, objects: number }

export function checkObjects (objects: ManifestObject[], flags: DoctorFlags = {}): { findings: Finding[], checked: CheckedObject[], workloads: number, checks: CheckRun[] } {
  const ran = new Map<CheckCode, number>()
  const mark = (code: CheckCode): void => { ran.set(code, (ran.get(code) ?? 0) + 1) }
  const ctx: PodContext = { flags, namespaces: injectingNamespaces(objects), mark }
  const infos: WorkloadInfo[] = []
  const services: Array<{ object: ManifestObject, report: Report }> = []
  let workloads = 0
  const findings: Finding[] = []
  const checked: CheckedObject[] = []
  for (const object of objects) {
    const id = `${object.kind}/${object.name}`
    const report: Report = (severity, code, path, text) => {
      const pos = object.locate(path)
      findings.push({ severity, code, file: object.file, line: pos.line, column: pos.column, object: id, ...text })
    }
    const entry: CheckedObject = { file: object.file, object: id, line: object.locate([]).line }
    const pod = podTemplateOf(object)
    if (pod !== undefined) {
      workloads++
      const { choice, budget, sidecar, config, istio } = checkPod(pod, ctx, report)
      entry.window = { totalMs: choice.window.totalMs, preset: choice.window.preset, source: choice.source, maxRequestMs: choice.maxRequestMs, maxRequestSource: choice.maxRequestSource }
      entry.budget = { sidecar, shutdownTimeoutMs: budget.shutdownTimeoutMs, terminationGracePeriodSeconds: budget.terminationGracePeriodSeconds, ...(budget.sidecarPhase ? { sidecarPhaseMs: budget.sidecarPhase.ms } : {}) }
      if (istio !== undefined) entry.istio = istio
      infos.push({ object, pod, window: choice.window, maxRequestMs: choice.maxRequestMs, config, report })
    } else if (object.kind === 'Service') {
      mark('etp-local')
      services.push({ object, report })
    } else if (object.kind === 'Ingress') {
      mark('nginx-pod-upstream')
      checkIngress(object, report)
    } else if (!CLUSTER_KINDS.has(object.kind)) {
      entry.note = object.kind === 'CustomResourceDefinition'
        ? 'skipped: a CustomResourceDefinition (the doctor reads objects, not their schemas)'
        : `skipped: ${object.kind} is not a kind the doctor reads (${object.value.apiVersion === undefined ? 'no apiVersion' : String(object.value.apiVersion)})`
    }
    checked.push(entry)
  }
  const byObject = new Map<ManifestObject, Report>()
  for (const object of objects) {
    byObject.set(object, (severity, code, path, text) => {
      const pos = object.locate(path)
      findings.push({ severity, code, file: object.file, line: pos.line, column: pos.column, object: `${object.kind}/${object.name}`, ...text })
    })
  }
  checkCluster(objects, infos, (o) => byObject.get(o)!, mark)
  for (const s of services) checkService(s.object, s.report, infos)
  const rank: Record<Severity, number> = { error: 0, warning: 1, info: 2 }
  findings.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || rank[a.severity] - rank[b.severity])
  const checks = CHECKS.filter((c) => ran.has(c.code)).map((c) => ({ code: c.code, severity: c.severity, what: c.what, objects: ran.get(c.code)! }))
  return { findings, checked, workloads, checks }
}

function appContainers (pod: PodTemplate): Container[] {
  const candidates = pod.containers.filter((c) => proxyKind(c) === undefined)
  const declared = pod.annotations[CONTAINER_ANNOTATION] ?? pod.workloadAnnotations[CONTAINER_ANNOTATION]
  if (declared !== undefined) {
    const names = declared.split(',').map((s) => s.trim())
    return candidates.filter((c) => names.includes(c.name))
  }
  const serving = candidates.filter((c) => Array.isArray(c.value.ports) && c.value.ports.length > 0)
  return serving.length > 0 ? serving : candidates
}

const CLUSTER_KINDS = new Set(['Namespace', 'PodDisruptionBudget', 'HTTPRoute', 'GRPCRoute', 'EnvoyProxy', 'BackendTrafficPolicy', 'DestinationRule', 'BackendConfig', 'Gateway', 'GatewayClass', 'HorizontalPodAutoscaler'])

interface PodContext {
  flags: DoctorFlags
  namespaces: ReturnType<typeof injectingNamespaces>
  mark: (code: CheckCode) => void
}

function checkPod (pod: PodTemplate, ctx: PodContext, report: Report): { choice: WindowChoice, budget: Budget, sidecar: 'istio' | 'native' | null, config: AppConfig, istio?: { mode: 'classic' | 'native' | 'ambient', why: string } } {
  const apps = appContainers(pod)
  const choice = chooseWindow(pod, apps, ctx.flags)
  const config = appConfig(pod, apps)
  ctx.mark('bad-annotation')
  for (const p of config.problems) report('error', 'bad-annotation', p.path, { message: p.message, fix: 'write the value as the message says, or remove the annotation' })
  for (const p of choice.problems) report('error', 'bad-annotation', p.path, { message: p.message, fix: 'use a preset name (eureka-ribbon, eureka-spring, eureka-node, nacos, kubernetes, none) or JSON parts, e.g. {"preset":"nacos","marginMs":2000}' })
  const W = choice.window.totalMs
  const windowWhy = `${sec(W)} window (${choice.window.preset}, ${choice.source.split(';')[0]})`
  const ambient = ctx.flags.sidecar === undefined ? ambientOf(pod, ctx.namespaces) : { ambient: false, why: '' }
  const ownInject = pod.labels['sidecar.istio.io/inject'] ?? pod.annotations['sidecar.istio.io/inject']
  // Ambient pods get no sidecar unless they ask for one themselves.
  const injection: Injection = ambient.ambient && ownInject !== 'true' ? { injected: false, why: ambient.why } : istioInjection(pod, ctx.namespaces, ctx.flags.sidecar)
  const mode = istioMode(pod, ctx.namespaces, ctx.flags.istioVersion)
  const sidecar = ambient.ambient && !injection.injected ? null : budgetSidecar(pod, injection, ctx.flags.sidecar)
  const budget = shutdownBudget({ windowMs: W, maxRequestMs: choice.maxRequestMs, sidecar, ...envoyDrainOf(pod, sidecar) })
  for (const c of apps) {
    ctx.mark('prestop-missing')
    ctx.mark('sleep-shorter-than-window')
    ctx.mark('readiness-missing')
    ctx.mark('readiness-slow')
    checkPreStop(c, W, windowWhy + (ambient.ambient ? `, which also covers ztunnel learning of the deletion late (~${sec(ZTUNNEL_LAG_MS)}, istio/istio#58514)` : ''), report)
    checkReadiness(c, W, windowWhy, report)
    checkGrpc(c, ctx.mark, report)
  }
  ctx.mark('grace-too-short')
  checkGrace(pod, apps, budget, budgetWhy(windowWhy, budget, sidecar), report)
  let istio: { mode: 'classic' | 'native' | 'ambient', why: string } | undefined
  if (ambient.ambient && !injection.injected) {
    istio = { mode: 'ambient', why: ambient.why }
    ctx.mark('ambient-sidecar')
    ctx.mark('ambient-ztunnel-lag')
    checkAmbient(pod, config, ambient, W, windowWhy, report)
  } else {
    ctx.mark('sidecar-stops-first')
    ctx.mark('istio-hold-off')
    if (injection.injected || sidecar === 'istio') {
      istio = { mode: mode.mode, why: mode.why }
      ctx.mark('istio-idle-stats')
      ctx.mark('istio-proxy-native-merge')
    }
    checkSidecars(pod, injection, mode, windowWhy, sidecar, report)
  }
  checkPodExtras(pod, apps, { window: choice.window, windowWhy, config, maxRequestMs: choice.maxRequestMs }, ctx.mark, report)
  return { choice, budget, sidecar, config, ...(istio ? { istio } : {}) }
}

/** A plain Envoy's --drain-strategy and --drain-time-s from its args (Istio runs it immediate). */
function envoyDrainOf (pod: PodTemplate, sidecar: 'istio' | 'native' | null): { envoyDrainStrategy?: 'immediate' | 'gradual', envoyDrainTimeMs?: number } {
  if (sidecar !== 'native') return {}
  const envoy = [...pod.initContainers, ...pod.containers].find((c) => proxyKind(c) === 'envoy')
  if (envoy === undefined) return {}
  const argv = [...(Array.isArray(envoy.value.command) ? envoy.value.command : []), ...(Array.isArray(envoy.value.args) ? envoy.value.args : [])].map(String)
  const value = (flag: string): string | undefined => {
    const i = argv.findIndex((a) => a === flag || a.startsWith(`${flag}=`))
    if (i < 0) return undefined
    return argv[i]!.includes('=') ? argv[i]!.split('=')[1] : argv[i + 1]
  }
  const strategy = value('--drain-strategy')
  const time = Number(value('--drain-time-s'))
  return {
    ...(strategy === 'immediate' || strategy === 'gradual' ? { envoyDrainStrategy: strategy } : {}),
    ...(Number.isFinite(time) && time >= 0 && value('--drain-time-s') !== undefined ? { envoyDrainTimeMs: time * 1000 } : {})
  }
}

function checkAmbient (pod: PodTemplate, config: AppConfig, ambient: { why: string, path?: Path }, W: number, windowWhy: string, report: Report): void {
  const declared = [...pod.containers, ...pod.initContainers].find((c) => proxyKind(c) === 'istio')
  if (config.sidecar !== undefined || declared !== undefined) {
    report('error', 'ambient-sidecar', config.sidecar?.path ?? declared!.path, {
      message: `${ambient.why}: ztunnel carries this pod's traffic and there is no per-pod proxy, but ${config.sidecar !== undefined ? `the app is set to drain a sidecar (lameduck.dev/sidecar: ${config.sidecar.value})` : `the pod declares '${declared!.name}'`}: the plugin's sidecar step waits for an Envoy admin that never answers (startup fails after readyTimeoutMs)`,
      fix: 'remove the sidecar option (sidecar.envoyAdmin) from the app and the lameduck.dev/sidecar annotation; keep the preStop, which holds the app up for the window'
    })
  }
  if (W < ZTUNNEL_LAG_MS) {
    report('error', 'ambient-ztunnel-lag', ambient.path ?? pod.metaPath, {
      message: `${ambient.why}: the ${windowWhy} is shorter than ztunnel's lag in learning of a deletion (~${sec(ZTUNNEL_LAG_MS)}, istio/istio#58514): ztunnel still sends new connections to this pod after the app stopped`,
      fix: `give the window an endpoint term of at least ${sec(ZTUNNEL_LAG_MS)} (the 'kubernetes' preset's endpointLagMs covers it)`
    })
  }
}

function checkPreStop (c: Container, W: number, windowWhy: string, report: Report): void {
  const hook = describeHook(get(c.value, ['lifecycle', 'preStop']))
  if (!hook.present) {
    report('error', 'prestop-missing', c.path, {
      container: c.name,
      message: `container '${c.name}' has no preStop hook: kubelet sends SIGTERM at once, while consumers may still route here for the ${windowWhy}, so requests keep arriving at a pod that is stopping`,
      fix: `add lifecycle.preStop.exec.command: ["lameduck", "prestop"] to '${c.name}'`
    })
  } else if (hook.offline === null && hook.sleepSeconds !== null && hook.sleepSeconds * 1000 < W) {
    const ms = hook.sleepSeconds * 1000
    report('error', 'sleep-shorter-than-window', [...c.path, 'lifecycle', 'preStop'], {
      container: c.name,
      message: `container '${c.name}': preStop sleeps ${sec(ms)}, but consumers may still route here for the ${windowWhy}: the app gets SIGTERM ${sec(W - ms)} too early`,
      fix: `use lifecycle.preStop.exec.command: ["lameduck", "prestop"], which waits until the app is offline, or sleep at least ${Math.ceil(W / 1000)} s`
    })
  }
}

/** What the shutdown budget is made of, in words. */
function budgetWhy (windowWhy: string, budget: Budget, sidecar: 'istio' | 'native' | null): string {
  const parts = [`the ${windowWhy}`]
  if (budget.sidecarDrainMs > 0) parts.push(`${sec(budget.sidecarDrainMs)} sidecar phase`)
  parts.push(`${sec(budget.maxRequestMs)} longest request`, `${sec(CLOSE_SLACK_MS)} to close`)
  if (sidecar === 'istio') parts.push(`${ISTIO_MINIMUM_DRAIN_S} s Istio proxy drain`)
  return parts.join(' + ')
}

// Grace period: kubelet SIGKILLs the pod this long after termination starts, preStop included.
// The pod needs the plugin's shutdown budget (plan's formula); a preStop that only sleeps
// comes on top, since the app drains after the SIGTERM that follows it.
function checkGrace (pod: PodTemplate, apps: Container[], budget: Budget, why: string, report: Report): void {
  const graceSet = typeof pod.spec.terminationGracePeriodSeconds === 'number'
  const grace = graceSet ? pod.spec.terminationGracePeriodSeconds as number : DEFAULT_GRACE_S
  let need = budget.podNeedsMs
  let needWhy = `draining takes ${why}`
  for (const c of apps) {
    const hook = describeHook(get(c.value, ['lifecycle', 'preStop']))
    if (!hook.present || hook.sleepSeconds === null) continue
    const sleepMs = hook.sleepSeconds * 1000
    const ms = hook.offline !== null ? Math.max(budget.podNeedsMs, sleepMs) : sleepMs + budget.podNeedsMs
    if (ms <= need) continue
    need = ms
    needWhy = hook.offline !== null
      ? `preStop '${hook.text}' sleeps ${sec(sleepMs)}`
      : `preStop '${hook.text}' sleeps ${sec(sleepMs)}, then on SIGTERM the app drains for ${why}`
  }
  if (need <= grace * 1000) return
  report('error', 'grace-too-short', graceSet ? [...pod.specPath, 'terminationGracePeriodSeconds'] : pod.specPath, {
    message: `terminationGracePeriodSeconds is ${grace}${graceSet ? '' : ' (the default, unset)'}, but ${needWhy}: kubelet SIGKILLs the pod at ${grace} s, while consumers may still route to it or requests are in flight`,
    fix: `set terminationGracePeriodSeconds: ${graceSecondsFor(need)} or more (\`lameduck plan\` prints it with the rest)`
  })
}

function checkReadiness (c: Container, W: number, windowWhy: string, report: Report): void {
  const probe = c.value.readinessProbe
  const port = firstPort(c)
  if (!isRecord(probe)) {
    report('error', 'readiness-missing', c.path, {
      container: c.name,
      message: `container '${c.name}' has no readinessProbe: the pod counts as ready as soon as the container starts, so the Service sends requests before the app can serve them, and a manual /offline cannot take the pod out of the Service`,
      fix: grpcReadinessFix(c) ?? `add readinessProbe: { httpGet: { path: /health/ready, port: ${port} }, periodSeconds: 2, failureThreshold: 2 }`
    })
    return
  }
  const period = typeof probe.periodSeconds === 'number' ? probe.periodSeconds : 10
  const failures = typeof probe.failureThreshold === 'number' ? probe.failureThreshold : 3
  const outMs = period * failures * 1000
  if (W > 0 && outMs > W) {
    report('warning', 'readiness-slow', [...c.path, 'readinessProbe'], {
      container: c.name,
      message: `container '${c.name}': the readinessProbe takes up to ${period} s × ${failures} = ${sec(outMs)} to take the pod out of the Service, longer than the ${windowWhy}. Termination removes the endpoint at once, but after a manual /offline, and for load balancers that follow pod readiness, the pod is still routed to after its window ended`,
      fix: `make periodSeconds × failureThreshold shorter than ${sec(W)}, e.g. periodSeconds: 2, failureThreshold: 2`
    })
  }
}

/** The pod's Istio ProxyConfig overrides (annotation), when any; why it could not be read, when not. */
function readProxyConfig (raw: string | undefined): { proxyConfig: Record<string, unknown>, unreadable: string } {
  if (raw === undefined) return { proxyConfig: {}, unreadable: '' }
  try {
    const parsed: unknown = parseYaml(raw)
    return { proxyConfig: isRecord(parsed) ? parsed : {}, unreadable: '' }
  } catch (err) {
    return { proxyConfig: {}, unreadable: ` (the annotation is not valid YAML/JSON: ${(err as Error).message.split('\n')[0]})` }
  }
}

function checkSidecars (pod: PodTemplate, injection: Injection, mode: IstioMode, windowWhy: string, sidecar: 'istio' | 'native' | null, report: Report): void {
  const injected = injection.injected
  const istioNative = mode.mode === 'native'
  const declaredIstio = pod.containers.find((c) => proxyKind(c) === 'istio')
  const injectPath = injection.path ?? pod.metaPath
  const fix = (name: string): string => `add lifecycle.preStop.exec.command: ["lameduck", "wait-drained"] to '${name}' (it blocks until the app is offline), or run the proxy as a native sidecar (initContainers with restartPolicy: Always${name === 'istio-proxy' ? `, or annotation ${ISTIO_NATIVE}: "true"` : ''}), which kubelet stops only after the app`

  const raw = pod.annotations[ISTIO_CONFIG]
  const { proxyConfig, unreadable } = readProxyConfig(raw)
  const drainDuration = typeof proxyConfig.terminationDrainDuration === 'string' ? proxyConfig.terminationDrainDuration : 'default 5 s'
  const istioStop = `pilot-agent kills Envoy after terminationDrainDuration (${drainDuration})`

  for (const c of pod.containers) {
    const kind = proxyKind(c)
    if (kind === undefined || (kind === 'istio' && istioNative)) continue
    if (describeHook(get(c.value, ['lifecycle', 'preStop'])).waitDrained) continue
    report('error', 'sidecar-stops-first', c.path, {
      container: c.name,
      message: `sidecar '${c.name}' is a regular container: kubelet sends it SIGTERM together with the app${kind === 'istio' ? ` and ${istioStop}` : ''}, while the app still serves for the ${windowWhy}: requests through the proxy fail in both directions`,
      fix: fix(c.name)
    })
  }
  if (injected && declaredIstio === undefined && !istioNative) {
    report('error', 'sidecar-stops-first', injectPath, {
      message: `${injection.why}: Istio injects istio-proxy as a regular container without a preStop (${mode.why}): kubelet stops it together with the app and ${istioStop}, while the app still serves for the ${windowWhy}`,
      fix: `declare a container named istio-proxy with image: auto and lifecycle.preStop.exec.command: ["lameduck", "wait-drained"] (Istio merges it into the injected one), or annotation ${ISTIO_NATIVE}: "true"`
    })
  }

  if (istioNative && declaredIstio !== undefined) {
    report('warning', 'istio-proxy-native-merge', declaredIstio.path, {
      container: declaredIstio.name,
      message: `'${declaredIstio.name}' is declared in containers, but ${mode.why}: Istio injects the proxy as an init container, so this regular container is not the proxy kubelet stops last, and its preStop no longer applies to it`,
      fix: `remove the istio-proxy container (native sidecars stop after the app by themselves), or pin the classic sidecar with annotation ${ISTIO_NATIVE}: "false"`
    })
  }
  if (sidecar === 'istio' && (injected || declaredIstio !== undefined || istioNative)) {
    const have = (pod.annotations[ISTIO_STATS_SUFFIXES] ?? '').split(',').map((x) => x.trim())
    const missing = IDLE_RULE_SUFFIXES.filter((x) => !have.includes(x))
    if (missing.length > 0) {
      report('warning', 'istio-idle-stats', pod.annotations[ISTIO_STATS_SUFFIXES] !== undefined ? [...pod.metaPath, 'annotations', ISTIO_STATS_SUFFIXES] : pod.metaPath, {
        message: `Istio's stats matcher keeps no ${missing.join(', ')} for this pod: the sidecar step's idle rule cannot see that no request is in flight, so a consumer that pools an idle keep-alive connection holds the drain until drainTimeoutMs (30 s by default) and the pod stops that much later`,
        fix: `add annotation ${ISTIO_STATS_SUFFIXES}: "${[...have.filter((x) => x !== ''), ...missing].join(',')}"`
      })
    }
  }
  if ((injected || declaredIstio !== undefined) && !istioNative) {
    const hold = proxyConfig.holdApplicationUntilProxyStarts === true || proxyConfig.holdApplicationUntilProxyStarts === 'true'
    if (!hold) {
      const path = raw !== undefined ? [...pod.metaPath, 'annotations', ISTIO_CONFIG] : (injected ? injectPath : declaredIstio!.path)
      report('warning', 'istio-hold-off', path, {
        message: `holdApplicationUntilProxyStarts is not set for this pod${unreadable}: the app starts in parallel with istio-proxy, and its first outbound calls (registering, config, database) fail until the proxy is ready`,
        fix: `add annotation ${ISTIO_CONFIG}: '{ "holdApplicationUntilProxyStarts": true }' (if the mesh sets it in meshConfig.defaultConfig, this warning does not apply)`
      })
    }
  }
}

function checkService (object: ManifestObject, report: Report, workloads: WorkloadInfo[]): void {
  if (get(object.value, ['spec', 'externalTrafficPolicy']) !== 'Local') return
  // Pods that keep passing readiness while draining ('serve') stay usable as serving-terminating
  // local endpoints (KEP-1669) until the load balancer's health check moves away: nothing is dropped.
  const selector = get(object.value, ['spec', 'selector'])
  const selected = isRecord(selector) && Object.keys(selector).length > 0
    ? workloads.filter((w) => (w.object.namespace ?? '') === (object.namespace ?? '') && Object.entries(selector).every(([k, v]) => w.pod.labels[k] === String(v)))
    : []
  if (selected.length > 0 && selected.every((w) => w.config.readiness === 'serve')) return
  report('warning', 'etp-local', ['spec', 'externalTrafficPolicy'], {
    message: 'externalTrafficPolicy: Local: the load balancer sends only to nodes that pass its own health check (healthCheckNodePort), so when the last pod on a node terminates it keeps sending there until that check fails (interval × unhealthy threshold, often 10–30 s); the node has no local pod left to forward to (a terminating pod is used only while it still passes readiness, which lameduck fails from the start of a drain), and those requests are dropped',
    tradeoff: 'Local keeps the client source IP and saves a hop between nodes; Cluster (the default) loses the source IP (SNAT) but every node forwards to any ready pod, so a node losing its last pod costs nothing',
    fix: 'use externalTrafficPolicy: Cluster, or keep Local with the app\'s readinessWhileDraining: "serve" (annotation lameduck.dev/readiness-while-draining) and a window that outlasts the load balancer\'s health check (endpointLagMs ≥ its interval × unhealthy threshold)'
  })
}

function checkIngress (object: ManifestObject, report: Report): void {
  const annotations = isRecord(get(object.value, ['metadata', 'annotations'])) ? get(object.value, ['metadata', 'annotations']) as Record<string, unknown> : {}
  const className = String(get(object.value, ['spec', 'ingressClassName']) ?? annotations['kubernetes.io/ingress.class'] ?? '')
  const nginx = /nginx/i.test(className) || Object.keys(annotations).some((k) => k.startsWith('nginx.ingress.kubernetes.io/'))
  if (!nginx || String(annotations[SERVICE_UPSTREAM]) === 'true') return
  report('warning', 'nginx-pod-upstream', ['metadata', 'annotations', SERVICE_UPSTREAM], {
    message: 'ingress-nginx balances over the pod IPs itself: it stops sending to a terminating pod only once its own endpoint sync has run, and meanwhile reuses its keep-alive upstream connections to that pod, so the window must cover the controller\'s lag too',
    tradeoff: `${SERVICE_UPSTREAM}: "true" sends to the Service's ClusterIP, so kube-proxy follows endpoint removal, but it turns off nginx's own balancing (EWMA, session affinity, canary weights) and its retries on another pod (proxy_next_upstream sees a single upstream)`,
    fix: `add annotation ${SERVICE_UPSTREAM}: "true", or keep pod IPs and make the window's endpointLagMs cover the controller's endpoint sync`
  })
}

function firstPort (c: Container): number | string {
  const ports = Array.isArray(c.value.ports) ? c.value.ports : []
  const first = ports.find(isRecord)
  return typeof first?.containerPort === 'number' ? first.containerPort : 3000
}
