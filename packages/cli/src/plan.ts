// The numbers `lameduck plan` prints, derived from core's window calculator and
// the plugin's defaults, so a manifest and the app agree on every duration.
import { SHUTDOWN_DEFAULTS, defaultShutdownTimeoutMs, propagationWindow, type PropagationWindow, type WindowsInput } from '@lameduck/core'
import { kubernetesAccess, type KubernetesAccess, type KubernetesAccessInput } from './plan-kubernetes.ts'

/** @lameduck/fastify's maxRequestMs default. */
export const DEFAULT_MAX_REQUEST_MS = SHUTDOWN_DEFAULTS.maxRequestMs
/** @lameduck/fastify's sidecar.drainTimeoutMs default. */
export const DEFAULT_SIDECAR_DRAIN_TIMEOUT_MS = SHUTDOWN_DEFAULTS.sidecarDrainTimeoutMs
/** The slack @lameduck/fastify adds to its default shutdownTimeoutMs (closing the server). */
export const CLOSE_SLACK_MS = SHUTDOWN_DEFAULTS.closeSlackMs
/** Seconds between the plugin's own bound and kubelet's SIGKILL. */
export const KILL_MARGIN_S = 5
/** Istio: what the proxy waits after its SIGTERM before counting connections. */
export const ISTIO_MINIMUM_DRAIN_S = 5
export const ISTIO_ENVOY_ADMIN = 'http://127.0.0.1:15000'
/** Envoy's customary admin address (its docs and examples). */
export const ENVOY_ADMIN = 'http://127.0.0.1:9901'
/** @lameduck/envoy's sidecar defaults for the idle rule (packages/envoy/README.md). */
export const DEFAULT_IDLE_QUIET_MS = 2_000
export const DEFAULT_CHECK_INTERVAL_MS = 1_000
/** Envoy's own default --drain-time-s (600) with --drain-strategy gradual. */
export const ENVOY_DEFAULT_DRAIN_TIME_MS = 600_000
export type EnvoyDrainStrategy = 'immediate' | 'gradual'
export const WINDOWS_ANNOTATION = 'lameduck.dev/windows'
export const MAX_REQUEST_ANNOTATION = 'lameduck.dev/max-request-ms'
/**
 * The app writes its last drain's account to the termination log (its `terminationMessage`);
 * FallbackToLogsOnError shows the log's tail instead when the container failed without writing it.
 */
export const TERMINATION_MESSAGE_POLICY = 'FallbackToLogsOnError'

export interface PlanInput {
  windows: WindowsInput
  maxRequestMs?: number
  /** The app's openTelemetry.flushTimeoutMs: the SDK flush step, reserved in shutdownTimeoutMs. */
  telemetryFlushMs?: number
  /** 'istio': injected istio-proxy; 'native': an Envoy native sidecar (initContainers, restartPolicy: Always). */
  sidecar?: 'istio' | 'native' | undefined
  sidecarDrainTimeoutMs?: number
  /** The sidecar's Envoy admin URL. Default 15000 (istio) or 9901 (native). */
  envoyAdmin?: string
  /** App container name in the patch. Default 'app'. */
  container?: string
  /** App port for the readiness probe. Default 3000 (50051 with grpc). */
  port?: number
  /** The app is a gRPC server (attachGrpc): Kubernetes' native gRPC readiness probe (grpc.health.v1) instead of httpGet. */
  grpc?: boolean
  envoyDrainStrategy?: EnvoyDrainStrategy
  envoyDrainTimeMs?: number
  idleQuietMs?: number
  /** The cluster's Kubernetes minor version (1.34 → 34); decides the preStop form. Default 34. */
  kubernetesMinor?: number
  /** The image has no lameduck CLI: the app's SIGTERM path does the drain after a preStop sleep. */
  noCli?: boolean
  /** The app's warmupMs: minReadySeconds and every balancer's ramp. */
  warmupMs?: number
  /** Istio: 'native' (default from 1.27) or 'classic' injection. Default 'native'. */
  istioMode?: 'classic' | 'native'
  /** Istio ambient: no sidecar to drain; the window's endpoint term must cover ztunnel's lag. */
  ambient?: boolean
  /** The workload's name and app label, for the resources. Default 'orders'. */
  name?: string
  /** @lameduck/kubernetes observedWindow(): the endpoint term from this pod's own endpoint. */
  observedWindow?: KubernetesAccessInput['observedWindow']
  /** @lameduck/kubernetes readinessGate(): the pod condition a rollout waits for. */
  readinessGate?: KubernetesAccessInput['readinessGate']
  /** The ServiceAccount the Role binds. Default '<name>-lameduck'. */
  serviceAccount?: string
}

export interface ExecHook { exec: { command: string[] } }
export type PreStop = ExecHook | { sleep: { seconds: number } }
/** The sleep action is GA (on by default, no feature gate) from Kubernetes 1.34 (KEP-3960, KEP-4818). */
export const SLEEP_ACTION_MINOR = 34
/** ztunnel learns of a pod's deletion 200–500 ms after its container exits (istio/istio#58514): a window term. */
export const ZTUNNEL_LAG_MS = 1_000

export interface Plan {
  window: PropagationWindow
  maxRequestMs: number
  sidecar: 'istio' | 'native' | null
  /** What to pass to @lameduck/fastify. */
  plugin: {
    windows: WindowsInput
    maxRequestMs: number
    shutdownTimeoutMs: number
    sidecar?: { envoyAdmin: string, drainTimeoutMs: number, idleQuietMs: number }
    openTelemetry?: { flushTimeoutMs: number }
  }
  /** The sidecar phase under the idle rule (null without a sidecar). */
  sidecarPhase: SidecarPhase | null
  shutdownTimeoutMs: number
  /**
   * The app server's keepAliveTimeout at most: the window in whole seconds (the
   * Keep-Alive hint's unit). Clients then drop idle connections inside the window,
   * and the drain never closes one under a request. null: a window under 1 s.
   */
  maxKeepAliveTimeoutMs: number | null
  terminationGracePeriodSeconds: number
  /** The OpenTelemetry flush step's bound inside shutdownTimeoutMs; 0: none. */
  telemetryFlushMs: number
  terminationMessagePolicy: typeof TERMINATION_MESSAGE_POLICY
  container: string
  preStop: PreStop
  /** Why this preStop form. */
  preStopWhy: string
  /** The app's warmup, and what follows from it (null: no warmup given). */
  warmup: { ms: number, minReadySeconds: number, seconds: number } | null
  ambient: boolean
  name: string
  /** httpGet /health/ready, or for a gRPC app (grpc) Kubernetes' native gRPC probe: grpc.health.v1 on its port. */
  readinessProbe: ({ httpGet: { path: string, port: number } } | { grpc: { port: number } }) & { periodSeconds: number, failureThreshold: number }
  annotations: Record<string, string>
  /** What the @lameduck/kubernetes options need (env, readinessGates, RBAC); null without them. */
  kubernetes: KubernetesAccess | null
  istio: {
    proxyConfig: {
      holdApplicationUntilProxyStarts: true
      terminationDrainDuration: string
      proxyMetadata: { EXIT_ON_ZERO_ACTIVE_CONNECTIONS: 'true', MINIMUM_DRAIN_DURATION: string }
    }
    /** null with native injection: kubelet stops the proxy after the app by itself. */
    sidecarPreStop: ExecHook | null
    mode: 'classic' | 'native'
    statsInclusionSuffixes: string
  } | null
}

export interface BudgetInput {
  windowMs: number
  maxRequestMs?: number | undefined
  sidecar: 'istio' | 'native' | null
  sidecarDrainTimeoutMs?: number | undefined
  /** How Envoy tells connections to close: Istio runs it 'immediate'; Envoy's own default is 'gradual'. */
  envoyDrainStrategy?: EnvoyDrainStrategy | undefined
  /** Envoy's --drain-time-s, in ms (gradual only). Default 600000. */
  envoyDrainTimeMs?: number | undefined
  idleQuietMs?: number | undefined
  checkIntervalMs?: number | undefined
  /** The app's OpenTelemetry flush step (openTelemetry.flushTimeoutMs), after the close. */
  flushMs?: number | undefined
}

export interface SidecarPhase {
  /** The sidecar drain step as planned: at most drainTimeoutMs. */
  ms: number
  drainTimeoutMs: number
  /** When every remaining connection has been told to close: 0 (healthcheck, immediate) or the drain time (gradual). */
  toldToCloseMs: number
  idleQuietMs: number
  checkIntervalMs: number
  strategy: EnvoyDrainStrategy
  /** The formula hit drainTimeoutMs. */
  bounded: boolean
}

/**
 * The sidecar phase under @lameduck/envoy's idle rule: it ends once the last
 * request finished and every connection left was told to close, then stayed
 * quiet for idleQuietMs (two polls to see it): max(longest request, told-to-close)
 * + idleQuietMs + 2 × checkIntervalMs, bounded by drainTimeoutMs.
 */
export function sidecarPhase (input: { maxRequestMs: number, sidecar: 'istio' | 'native', drainTimeoutMs?: number | undefined, strategy?: EnvoyDrainStrategy | undefined, drainTimeMs?: number | undefined, idleQuietMs?: number | undefined, checkIntervalMs?: number | undefined }): SidecarPhase {
  const drainTimeoutMs = input.drainTimeoutMs ?? DEFAULT_SIDECAR_DRAIN_TIMEOUT_MS
  const strategy = input.strategy ?? (input.sidecar === 'istio' ? 'immediate' : 'gradual')
  const toldToCloseMs = strategy === 'immediate' ? 0 : (input.drainTimeMs ?? ENVOY_DEFAULT_DRAIN_TIME_MS)
  const idleQuietMs = input.idleQuietMs ?? DEFAULT_IDLE_QUIET_MS
  const checkIntervalMs = input.checkIntervalMs ?? DEFAULT_CHECK_INTERVAL_MS
  const formula = Math.max(input.maxRequestMs, toldToCloseMs) + idleQuietMs + 2 * checkIntervalMs
  return { ms: Math.min(drainTimeoutMs, formula), drainTimeoutMs, toldToCloseMs, idleQuietMs, checkIntervalMs, strategy, bounded: formula > drainTimeoutMs }
}

export interface Budget {
  maxRequestMs: number
  /** 0 without a sidecar: the sidecar phase under the idle rule. */
  sidecarDrainMs: number
  sidecarPhase: SidecarPhase | null
  /** The plugin's default shutdownTimeoutMs (core's shutdown budget). */
  shutdownTimeoutMs: number
  /** What the pod needs before kubelet may SIGKILL it: the plugin's bound, plus Istio's own drain after it. */
  podNeedsMs: number
  terminationGracePeriodSeconds: number
}

/**
 * The one formula `plan` and `doctor` share: core's shutdown budget with the
 * plugin's defaults (maxRequestMs 30 s, sidecar drain 30 s), then the grace period.
 */
export function shutdownBudget (input: BudgetInput): Budget {
  const maxRequestMs = input.maxRequestMs ?? DEFAULT_MAX_REQUEST_MS
  const phase = input.sidecar === null
    ? null
    : sidecarPhase({ maxRequestMs, sidecar: input.sidecar, drainTimeoutMs: input.sidecarDrainTimeoutMs, strategy: input.envoyDrainStrategy, drainTimeMs: input.envoyDrainTimeMs, idleQuietMs: input.idleQuietMs, checkIntervalMs: input.checkIntervalMs })
  const sidecarDrainMs = phase?.ms ?? 0
  // Core's budget: window + sidecar phase + longest request + close; then the engine's flush step.
  const shutdownTimeoutMs = defaultShutdownTimeoutMs(input.windowMs, { maxRequestMs, sidecarDrainTimeoutMs: sidecarDrainMs }) + (input.flushMs ?? 0)
  const podNeedsMs = shutdownTimeoutMs + (input.sidecar === 'istio' ? ISTIO_MINIMUM_DRAIN_S * 1000 : 0)
  return { maxRequestMs, sidecarDrainMs, sidecarPhase: phase, shutdownTimeoutMs, podNeedsMs, terminationGracePeriodSeconds: graceSecondsFor(podNeedsMs) }
}

/** terminationGracePeriodSeconds for a pod that needs `ms`: rounded up, plus the kill margin. */
export function graceSecondsFor (ms: number): number {
  return Math.ceil(ms / 1000) + KILL_MARGIN_S
}

/**
 * The preStop: `lameduck prestop` where the image has the CLI; else the sleep
 * action (1.34+) or the image's sleep for the window, and the app's SIGTERM
 * path drains after it (so the pod needs the sleep on top of the drain).
 */
function preStopFor (input: PlanInput, windowMs: number, drainNeedsMs: number): { preStop: PreStop, preStopWhy: string, podNeedsMs: number } {
  if (input.noCli !== true) return { preStop: { exec: { command: ['lameduck', 'prestop'] } }, preStopWhy: 'blocks until the app is offline', podNeedsMs: drainNeedsMs }
  const minor = input.kubernetesMinor ?? SLEEP_ACTION_MINOR
  const sleepSeconds = Math.ceil(windowMs / 1000)
  const action = minor >= SLEEP_ACTION_MINOR
  return {
    preStop: action ? { sleep: { seconds: sleepSeconds } } : { exec: { command: ['sleep', String(sleepSeconds)] } },
    preStopWhy: action
      ? `no CLI in the image: kubelet's own sleep action (Kubernetes >= 1.${SLEEP_ACTION_MINOR}) for the window, then the app's SIGTERM path drains`
      : `no CLI in the image and no sleep action before Kubernetes 1.${SLEEP_ACTION_MINOR}: the image's sleep binary for the window, then the app's SIGTERM path drains`,
    podNeedsMs: sleepSeconds * 1000 + drainNeedsMs
  }
}

/** What to pass to the plugin: the options the plan's numbers come from. */
function pluginOptions (input: PlanInput, budget: Budget, istio: boolean): Plan['plugin'] {
  const plugin: Plan['plugin'] = { windows: input.windows, maxRequestMs: budget.maxRequestMs, shutdownTimeoutMs: budget.shutdownTimeoutMs }
  if (input.telemetryFlushMs !== undefined && input.telemetryFlushMs > 0) plugin.openTelemetry = { flushTimeoutMs: input.telemetryFlushMs }
  if (budget.sidecarPhase !== null) plugin.sidecar = { envoyAdmin: input.envoyAdmin ?? (istio ? ISTIO_ENVOY_ADMIN : ENVOY_ADMIN), drainTimeoutMs: budget.sidecarPhase.drainTimeoutMs, idleQuietMs: budget.sidecarPhase.idleQuietMs }
  return plugin
}

/** Computes the plan. Throws InvalidOptionError (from core) on bad windows. */
export function computePlan (input: PlanInput): Plan {
  const window = propagationWindow(input.windows, 'windows')
  const ambient = input.ambient === true
  const sidecar = ambient ? null : (input.sidecar ?? null)
  const istio = sidecar === 'istio'
  const budget = shutdownBudget({ windowMs: window.totalMs, maxRequestMs: input.maxRequestMs, sidecar, sidecarDrainTimeoutMs: input.sidecarDrainTimeoutMs, envoyDrainStrategy: input.envoyDrainStrategy, envoyDrainTimeMs: input.envoyDrainTimeMs, idleQuietMs: input.idleQuietMs, flushMs: input.telemetryFlushMs })
  const { maxRequestMs, shutdownTimeoutMs } = budget
  // The probe must take the pod out of the Service well inside the window after
  // a manual /offline (termination removes the endpoint by itself).
  const fast = window.totalMs > 0 && window.totalMs < 4_000
  const annotations: Record<string, string> = {
    [WINDOWS_ANNOTATION]: typeof input.windows === 'string' ? input.windows : JSON.stringify(input.windows),
    [MAX_REQUEST_ANNOTATION]: String(maxRequestMs)
  }
  if (sidecar !== null) annotations['lameduck.dev/sidecar'] = sidecar
  const warmup = input.warmupMs !== undefined && input.warmupMs > 0
    ? { ms: input.warmupMs, minReadySeconds: Math.ceil(input.warmupMs / 1000), seconds: Math.ceil(input.warmupMs / 1000) }
    : null
  if (warmup !== null) annotations['lameduck.dev/warmup-ms'] = String(warmup.ms)
  const plugin = pluginOptions(input, budget, istio)

  const { preStop, preStopWhy, podNeedsMs } = preStopFor(input, window.totalMs, budget.podNeedsMs)
  const istioMode = input.istioMode ?? 'native'
  const kubernetes = kubernetesAccess({ observedWindow: input.observedWindow, readinessGate: input.readinessGate, serviceAccount: input.serviceAccount, name: input.name ?? 'orders' })
  // An observed window can end as soon as the endpoint flips + dataPlaneLagMs: keep-alive is bounded by that.
  const shortestWindowMs = kubernetes?.observedWindow ? Math.min(window.totalMs, Math.max(window.totalMs - window.parts.endpointLagMs, kubernetes.observedWindow.dataPlaneLagMs)) : window.totalMs
  return {
    window,
    maxRequestMs,
    sidecar,
    plugin,
    sidecarPhase: budget.sidecarPhase,
    shutdownTimeoutMs,
    maxKeepAliveTimeoutMs: shortestWindowMs >= 1_000 ? Math.floor(shortestWindowMs / 1000) * 1000 : null,
    terminationGracePeriodSeconds: graceSecondsFor(podNeedsMs),
    telemetryFlushMs: input.telemetryFlushMs ?? 0,
    terminationMessagePolicy: TERMINATION_MESSAGE_POLICY,
    container: input.container ?? 'app',
    preStop,
    preStopWhy,
    warmup,
    ambient,
    name: input.name ?? 'orders',
    readinessProbe: { ...(input.grpc === true ? { grpc: { port: input.port ?? 50051 } } : { httpGet: { path: '/health/ready', port: input.port ?? 3000 } }), periodSeconds: fast ? 1 : 2, failureThreshold: fast ? 1 : 2 },
    annotations,
    kubernetes,
    istio: istio
      ? {
          proxyConfig: {
            holdApplicationUntilProxyStarts: true,
            terminationDrainDuration: `${ISTIO_MINIMUM_DRAIN_S}s`,
            proxyMetadata: { EXIT_ON_ZERO_ACTIVE_CONNECTIONS: 'true', MINIMUM_DRAIN_DURATION: `${ISTIO_MINIMUM_DRAIN_S}s` }
          },
          sidecarPreStop: istioMode === 'classic' ? { exec: { command: ['lameduck', 'wait-drained'] } } : null,
          mode: istioMode,
          statsInclusionSuffixes: 'downstream_rq_active,downstream_rq_total'
        }
      : null
  }
}
