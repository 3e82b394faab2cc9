// The shutdown budget, shared by the plugin (its default shutdownTimeoutMs) and
// `lameduck plan` (terminationGracePeriodSeconds), so the manifest and the app agree.

export const SHUTDOWN_DEFAULTS = {
  /** Longest request a service serves: the bound of the in-flight wait. */
  maxRequestMs: 30_000,
  /** Bound on the sidecar (Envoy) drain phase. */
  sidecarDrainTimeoutMs: 30_000,
  /** Slack for closing the server after the drain. */
  closeSlackMs: 5_000
} as const

/** window + sidecar drain (0 without a sidecar) + longest request + close slack. */
export function defaultShutdownTimeoutMs (windowMs: number, parts: { maxRequestMs?: number, sidecarDrainTimeoutMs?: number } = {}): number {
  return windowMs + (parts.sidecarDrainTimeoutMs ?? 0) + (parts.maxRequestMs ?? SHUTDOWN_DEFAULTS.maxRequestMs) + SHUTDOWN_DEFAULTS.closeSlackMs
}
