import type { Instance } from './registry.ts'
import type { LifecycleState } from './states.ts'

// The lifecycle's public shapes: what events carry and what reports say.

export type InstanceBase = Omit<Instance, 'status' | 'metadata'> & { metadata?: Record<string, string> }

export interface StateChange { from: LifecycleState, to: LifecycleState, at: number, /** time spent in `from` */ durationMs: number, reason: string }

export interface Problem { step: string, message: string, at: number }

export interface OfflineReport {
  /** offline: drained; cancelled: /online interrupted it; cut: shutdown forced it short; skipped: never registered. */
  outcome: 'offline' | 'cancelled' | 'cut' | 'skipped'
  reason: string
  startedAt: number
  deregisteredAt: number | null
  windowMs: number
  windowEndedAt: number | null
  /** The window ended before its full length because every consumer was told (earlyOffline). */
  endedEarly: boolean
  sidecarMs: number
  inflightWaitMs: number
  endedAt: number
  totalMs: number
  requestsWhileDraining: number
  inflightAtEnd: number
  problems: Problem[]
}

export interface DrainProgress {
  phase: 'deregistering' | 'window' | 'sidecar' | 'inflight'
  reason: string
  startedAt: number
  deregisteredAt: number | null
  windowEndsAt: number
  requestsWhileDraining: number
  earlyOfflinePending: string | null
}

export interface LifecycleEvents {
  state: [StateChange]
  registered: [Instance]
  deregistered: [Instance]
  offline: [OfflineReport]
  problem: [Problem]
}
