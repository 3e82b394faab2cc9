// The offline sequence's own small state machine: the phases of one drain, in
// order, and what each one means to someone watching /status.

export const DRAIN_PHASES = ['deregistering', 'window', 'sidecar', 'inflight'] as const
export type DrainPhase = typeof DRAIN_PHASES[number]

export interface DrainPhaseInfo {
  /** `windowEndsAt` counts down the propagation window in this phase (a progress bar can fill). */
  readonly countdown: boolean
  /** One line for a human: what the instance is doing in this phase. */
  readonly summary: string
}

export const DRAIN_PHASE_INFO: Readonly<Record<DrainPhase, DrainPhaseInfo>> = {
  // Serving and retrying until the registry confirms; the window has not started.
  // `windowEndsAt` is then the shutdown budget's bound on this wait.
  deregistering: { countdown: false, summary: 'deregistration not confirmed yet: serving and retrying; the window starts once the registry confirms' },
  window: { countdown: true, summary: 'deregistered: serving through the propagation window' },
  sidecar: { countdown: false, summary: 'window passed, draining the sidecar' },
  inflight: { countdown: false, summary: 'window passed, waiting for in-flight requests' }
}
