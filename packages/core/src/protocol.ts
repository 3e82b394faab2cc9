import type { ConsumerTrackerReport } from './early-offline.ts'
import type { Instance } from './registry.ts'
import type { Lifecycle } from './lifecycle.ts'
import type { Deregistration, DrainProgress, InstanceBase, OfflineReport, Problem } from './lifecycle-types.ts'
import type { ReadinessState } from './readiness.ts'
import type { LifecycleState } from './states.ts'
import type { PropagationWindow, WindowBreakdownItem } from './windows.ts'
import type { WindowEvidenceStatus } from './window-evidence.ts'

// The admin protocol: what the admin listener serves and what `lameduck
// prestop`/`wait-drained` read. One definition, so the listeners and the CLI
// cannot drift apart. Type aliases (not interfaces) so the documents stay
// assignable to Record<string, unknown>, as before.

/** The admin listener's default port (the one EDAS made familiar). */
export const DEFAULT_ADMIN_PORT = 54199
/** The admin listener's default host: loopback, so only the pod itself can drain the app. */
export const DEFAULT_ADMIN_HOST = '127.0.0.1'
/** `http://127.0.0.1:54199`: what the CLI talks to unless told otherwise. */
export const DEFAULT_ADMIN_URL = `http://${DEFAULT_ADMIN_HOST}:${DEFAULT_ADMIN_PORT}`

/** The admin listener's routes. offline/online take `GET` or `POST` and `?wait=true`. */
export const ADMIN_ROUTES = {
  offline: '/offline',
  online: '/online',
  status: '/status',
  metrics: '/metrics'
} as const

/** What Lifecycle.status() returns: the lifecycle's part of the /status document. */
export type CoreStatus = {
  state: LifecycleState
  /** When the current state was entered (ms epoch). */
  since: number
  warming: boolean
  uptimeMs: number
  registeredAt: number | null
  instance: Instance | InstanceBase | null
  /** The registry adapter's describe(), `{ type: 'custom' }` without one, null without a registry. */
  registry: Record<string, unknown> | null
  window: { preset: PropagationWindow['preset'], totalMs: number, breakdown: WindowBreakdownItem[] }
  /** The windowEvidence option: what it stands in for and what it reads now (the drain's windowTerms say what ended each term); null without one. */
  windowEvidence: WindowEvidenceStatus | null
  maxRequestMs: number
  inflight: number
  requestsTotal: number
  readiness: ReadinessState
  /** The running offline sequence, or null. */
  drain: DrainProgress | null
  /** The latest offline sequence's deregistration, live; null when none ran since the last registration. */
  deregistration: Deregistration | null
  lastOffline: OfflineReport | null
  problems: Problem[]
  timings: Partial<Record<LifecycleState, number>>
}

/** What the listener (plugin, engine) knows beside the lifecycle. Every field optional; absent ones read null. */
/**
 * What `/health/ready` answers while draining: 'fail' (503 from the start of the
 * drain) or 'serve' (200 until the drain is over, for data planes that keep
 * routing to serving-terminating endpoints: a single replica, externalTrafficPolicy: Local).
 */
export type ReadinessWhileDraining = 'fail' | 'serve'
export const READINESS_WHILE_DRAINING: readonly ReadinessWhileDraining[] = ['fail', 'serve']

export interface StatusExtras {
  connections?: ConnectionStats | null
  readinessWhileDraining?: ReadinessWhileDraining | null
  /** ConsumerTracker.describe(), when earlyOffline is on. */
  earlyOffline?: ConsumerTrackerReport | null
  /** Why startup failed (readiness or a startup step), or null. Admin only: it may carry secrets. */
  broken?: string | null
  shutdownTimeoutMs?: number | null
  adminUrl?: string | null
}

export interface ConnectionStats {
  open: number
  closedWhileDraining: number
  /** Upgraded connections (WebSocket), where the listener tracks them: never swept, the app closes them. */
  upgraded?: number
}

/** GET /status: the whole document. */
export type LifecycleStatus = CoreStatus & {
  connections: ConnectionStats | null
  earlyOffline: ConsumerTrackerReport | null
  broken: string | null
  shutdownTimeoutMs: number | null
  adminUrl: string | null
  readinessWhileDraining: ReadinessWhileDraining | null
}

/** The /status document: the lifecycle's part plus the listener's. Every listener builds it here. */
export function buildStatus (lifecycle: Pick<Lifecycle, 'status'>, extras: StatusExtras = {}): LifecycleStatus {
  return {
    ...lifecycle.status(),
    connections: extras.connections ?? null,
    earlyOffline: extras.earlyOffline ?? null,
    broken: extras.broken ?? null,
    shutdownTimeoutMs: extras.shutdownTimeoutMs ?? null,
    adminUrl: extras.adminUrl ?? null,
    readinessWhileDraining: extras.readinessWhileDraining ?? null
  }
}

/** 202 from /offline without `wait`: the sequence started (or was already running). */
export type OfflineStarted = {
  state: LifecycleState
  windowMs: number
  breakdown: WindowBreakdownItem[]
  startedAt: number | null
  /** When the window phase ends as things stand (drain.windowEndsAt). */
  deadline: number | null
  drain: DrainProgress | null
}

/** 200 from /offline?wait=true: the sequence ended. Check `report.outcome` and `report.deregistration.state`. */
export type OfflineDone = {
  state: LifecycleState
  report: OfflineReport
  connections: ConnectionStats | null
}

/** 202/200 from /online. */
export type OnlineAnswer = { state: LifecycleState }

/** Any 4xx/5xx from the admin listener. */
export type AdminError = {
  error: string
  message: string
  /** The LameduckError code when there is one (e.g. LAMEDUCK_ERR_NOT_STARTED, LAMEDUCK_ERR_CLOSING). */
  code?: string
  state?: LifecycleState
}
