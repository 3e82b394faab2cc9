import type { DrainPhase } from './drain-phases.ts'
import type { Instance } from './registry.ts'
import type { LifecycleState } from './states.ts'
import type { WindowTerm } from './window-evidence.ts'

// The lifecycle's public shapes: what events carry and what reports say.

export type InstanceBase = Omit<Instance, 'status' | 'metadata'> & { metadata?: Record<string, string> }

export interface StateChange { from: LifecycleState, to: LifecycleState, at: number, /** time spent in `from` */ durationMs: number, reason: string }

export interface Problem { step: string, message: string, at: number }

/**
 * - `confirmed`: the registry acknowledged the deregistration; the window counts from then.
 * - `unconfirmed`: it has not (registry down, slow or refusing): consumers may still route here.
 *   Retries go on in the background until online() or close.
 * - `none`: nothing was registered (no registry, or the instance never got registered).
 */
export type DeregistrationState = 'confirmed' | 'unconfirmed' | 'none'

export interface Deregistration {
  state: DeregistrationState
  /** Calls sent so far, the one in flight included. */
  attempts: number
  /** The last failure's message, kept after a later success. */
  lastError: string | null
  /** When the registry confirmed, or null. */
  confirmedAt: number | null
}

export interface OfflineReport {
  /** offline: drained; cancelled: /online interrupted it; cut: shutdown forced it short; skipped: never registered. */
  outcome: 'offline' | 'cancelled' | 'cut' | 'skipped'
  reason: string
  startedAt: number
  /** When the registry confirmed (or the start, when nothing had to be deregistered); null while unconfirmed. */
  deregisteredAt: number | null
  /**
   * Whether the instance really left the registry. An `offline` outcome with
   * `unconfirmed` means the shutdown budget ran out first: say so, loudly.
   */
  deregistration: Deregistration
  windowMs: number
  windowEndedAt: number | null
  /** The window ended before its full length because every consumer was told (earlyOffline). */
  endedEarly: boolean
  /**
   * The window's terms and what ended each: the registry term (the deregistration + the parts),
   * and with windowEvidence the evidence's part (observed, the preset when unavailable, or pending
   * when the shutdown budget ended it). Empty when no window ran.
   */
  windowTerms: WindowTerm[]
  sidecarMs: number
  inflightWaitMs: number
  endedAt: number
  totalMs: number
  requestsWhileDraining: number
  inflightAtEnd: number
  problems: Problem[]
}

export interface DrainProgress {
  phase: DrainPhase
  reason: string
  startedAt: number
  deregisteredAt: number | null
  /**
   * When the window phase ends as things stand: the confirmed deregistration + the
   * window; while unconfirmed, the shutdown budget's bound (`latestWindowEndAt`).
   */
  windowEndsAt: number
  /** The latest the window phase may end, whatever the registry does (from `shutdownTimeoutMs`). */
  latestWindowEndAt: number
  deregistration: Deregistration
  /** The window's terms as things stand (see OfflineReport.windowTerms). */
  windowTerms: WindowTerm[]
  requestsWhileDraining: number
  earlyOfflinePending: string | null
}

/**
 * The drain sequence entered `phase`. `reason` says what ended the one before
 * (`previous`), e.g. 'deregistration confirmed' or 'window elapsed': the
 * evidence a timeline (telemetry, a report) shows for each step of a drain.
 */
export interface PhaseChange { phase: DrainPhase, previous: DrainPhase | null, at: number, reason: string }

export interface LifecycleEvents {
  state: [StateChange]
  phase: [PhaseChange]
  registered: [Instance]
  deregistered: [Instance]
  offline: [OfflineReport]
  problem: [Problem]
}
