import type { ConsumerTracker, Lifecycle } from '@lameduck/core'
import type { ConnectionStats } from './connections.ts'

export interface StatusContext {
  lifecycle: Lifecycle
  connections: () => ConnectionStats
  tracker: ConsumerTracker | undefined
  broken: () => Error | null
  shutdownTimeoutMs: number
  adminUrl: () => string | null
}

/** The status document: one builder for the admin `/status` and `handle.status()`. */
export function buildStatus (ctx: StatusContext): Record<string, unknown> {
  return {
    ...ctx.lifecycle.status(),
    connections: ctx.connections(),
    earlyOffline: ctx.tracker?.describe() ?? null,
    broken: ctx.broken()?.message ?? null,
    shutdownTimeoutMs: ctx.shutdownTimeoutMs,
    adminUrl: ctx.adminUrl()
  }
}
