// The numbers `lameduck plan` prints, derived from core's window calculator and
// the plugin's defaults, so a manifest and the app agree on every duration.
import { SHUTDOWN_DEFAULTS, defaultShutdownTimeoutMs, propagationWindow, type PropagationWindow, type WindowsInput } from '@lameduck/core'

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
export const WINDOWS_ANNOTATION = 'lameduck.dev/windows'
export const MAX_REQUEST_ANNOTATION = 'lameduck.dev/max-request-ms'

export interface PlanInput {
  windows: WindowsInput
  maxRequestMs?: number
  /** 'istio': injected istio-proxy; 'native': an Envoy native sidecar (initContainers, restartPolicy: Always). */
  sidecar?: 'istio' | 'native' | undefined
  sidecarDrainTimeoutMs?: number
  /** The sidecar's Envoy admin URL. Default 15000 (istio) or 9901 (native). */
  envoyAdmin?: string
  /** App container name in the patch. Default 'app'. */
  container?: string
  /** App port for the readiness probe. Default 3000. */
  port?: number
}

export interface ExecHook { exec: { command: string[] } }

export interface Plan {
  window: PropagationWindow
  maxRequestMs: number
  sidecar: 'istio' | 'native' | null
  /** What to pass to @lameduck/fastify. */
  plugin: {
    windows: WindowsInput
    maxRequestMs: number
    shutdownTimeoutMs: number
    sidecar?: { envoyAdmin: string, drainTimeoutMs: number }
  }
  shutdownTimeoutMs: number
  /**
   * The app server's keepAliveTimeout at most: the window in whole seconds (the
   * Keep-Alive hint's unit). Clients then drop idle connections inside the window,
   * and the drain never closes one under a request. null: a window under 1 s.
   */
  maxKeepAliveTimeoutMs: number | null
  terminationGracePeriodSeconds: number
  container: string
  preStop: ExecHook
  readinessProbe: { httpGet: { path: string, port: number }, periodSeconds: number, failureThreshold: number }
  annotations: Record<string, string>
  istio: {
    proxyConfig: {
      holdApplicationUntilProxyStarts: true
      terminationDrainDuration: string
      proxyMetadata: { EXIT_ON_ZERO_ACTIVE_CONNECTIONS: 'true', MINIMUM_DRAIN_DURATION: string }
    }
    sidecarPreStop: ExecHook
  } | null
}

export interface BudgetInput {
  windowMs: number
  maxRequestMs?: number | undefined
  sidecar: 'istio' | 'native' | null
  sidecarDrainTimeoutMs?: number | undefined
}

export interface Budget {
  maxRequestMs: number
  /** 0 without a sidecar. */
  sidecarDrainMs: number
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
  const sidecarDrainMs = input.sidecar !== null ? (input.sidecarDrainTimeoutMs ?? DEFAULT_SIDECAR_DRAIN_TIMEOUT_MS) : 0
  // The plugin's own default: window + sidecar drain + longest request + close.
  const shutdownTimeoutMs = defaultShutdownTimeoutMs(input.windowMs, { maxRequestMs, sidecarDrainTimeoutMs: sidecarDrainMs })
  const podNeedsMs = shutdownTimeoutMs + (input.sidecar === 'istio' ? ISTIO_MINIMUM_DRAIN_S * 1000 : 0)
  return { maxRequestMs, sidecarDrainMs, shutdownTimeoutMs, podNeedsMs, terminationGracePeriodSeconds: graceSecondsFor(podNeedsMs) }
}

/** terminationGracePeriodSeconds for a pod that needs `ms`: rounded up, plus the kill margin. */
export function graceSecondsFor (ms: number): number {
  return Math.ceil(ms / 1000) + KILL_MARGIN_S
}

/** Computes the plan. Throws InvalidOptionError (from core) on bad windows. */
export function computePlan (input: PlanInput): Plan {
  const window = propagationWindow(input.windows, 'windows')
  const istio = input.sidecar === 'istio'
  const sidecar = input.sidecar ?? null
  const { maxRequestMs, sidecarDrainMs, shutdownTimeoutMs, terminationGracePeriodSeconds } = shutdownBudget({ windowMs: window.totalMs, maxRequestMs: input.maxRequestMs, sidecar, sidecarDrainTimeoutMs: input.sidecarDrainTimeoutMs })
  // The probe must take the pod out of the Service well inside the window after
  // a manual /offline (termination removes the endpoint by itself).
  const fast = window.totalMs > 0 && window.totalMs < 4_000
  const annotations: Record<string, string> = {
    [WINDOWS_ANNOTATION]: typeof input.windows === 'string' ? input.windows : JSON.stringify(input.windows),
    [MAX_REQUEST_ANNOTATION]: String(maxRequestMs)
  }
  const plugin: Plan['plugin'] = { windows: input.windows, maxRequestMs, shutdownTimeoutMs }
  if (sidecar !== null) plugin.sidecar = { envoyAdmin: input.envoyAdmin ?? (istio ? ISTIO_ENVOY_ADMIN : ENVOY_ADMIN), drainTimeoutMs: sidecarDrainMs }
  return {
    window,
    maxRequestMs,
    sidecar,
    plugin,
    shutdownTimeoutMs,
    maxKeepAliveTimeoutMs: window.totalMs >= 1_000 ? Math.floor(window.totalMs / 1000) * 1000 : null,
    terminationGracePeriodSeconds,
    container: input.container ?? 'app',
    preStop: { exec: { command: ['lameduck', 'prestop'] } },
    readinessProbe: { httpGet: { path: '/health/ready', port: input.port ?? 3000 }, periodSeconds: fast ? 1 : 2, failureThreshold: fast ? 1 : 2 },
    annotations,
    istio: istio
      ? {
          proxyConfig: {
            holdApplicationUntilProxyStarts: true,
            terminationDrainDuration: `${ISTIO_MINIMUM_DRAIN_S}s`,
            proxyMetadata: { EXIT_ON_ZERO_ACTIVE_CONNECTIONS: 'true', MINIMUM_DRAIN_DURATION: `${ISTIO_MINIMUM_DRAIN_S}s` }
          },
          sidecarPreStop: { exec: { command: ['lameduck', 'wait-drained'] } }
        }
      : null
  }
}
