import { ClosingError, type Lifecycle } from '@lameduck/core'
import type { ConnectionStats } from './connections.ts'
import { NotListeningError } from './errors.ts'

/** An admin action's answer: an HTTP status and a JSON body. */
export interface AdminAnswer { statusCode: number, body: Record<string, unknown> }

/** What the admin API acts on: one lifecycle here, every worker in a cluster primary. */
export interface AdminBackend {
  offline(wait: boolean): Promise<AdminAnswer>
  online(wait: boolean): Promise<AdminAnswer>
  status(): Promise<Record<string, unknown>>
  /** The Prometheus text; absent: no /metrics route. */
  metrics?(): Promise<string>
  /** For the log line of each action. */
  state(): string
}

export interface LifecycleBackendContext {
  lifecycle: Lifecycle
  connections: () => ConnectionStats
  status: () => Record<string, unknown>
  metrics: (() => string | Promise<string>) | undefined
}

const conflict = (err: unknown, state: string): AdminAnswer => ({ statusCode: 409, body: { error: 'conflict', message: (err as Error).message, state } })

/**
 * The admin actions on one lifecycle. Before the server listens there is
 * nothing to take offline or bring online (an early /offline used to leave the
 * instance stuck): 409 `not listening yet` until then.
 */
export function lifecycleBackend (ctx: LifecycleBackendContext): AdminBackend {
  const { lifecycle } = ctx
  const notListening = (): AdminAnswer | null => lifecycle.state === 'starting'
    ? { statusCode: 409, body: { error: 'not listening yet', message: new NotListeningError('draining').message, state: lifecycle.state } }
    : null
  const windowInfo = () => ({ windowMs: lifecycle.window.totalMs, breakdown: lifecycle.window.breakdown })

  const render = ctx.metrics
  return {
    state: () => lifecycle.state,
    status: async () => ctx.status(),
    ...(render === undefined ? {} : { metrics: async () => await render() }),
    async offline (wait) {
      const early = notListening()
      if (early !== null) return early
      let done
      try {
        done = lifecycle.offline('admin /offline')
      } catch (err) {
        return conflict(err, lifecycle.state)
      }
      if (!wait) {
        done.catch(() => {})
        const drain = lifecycle.drain
        // Already offline: the answer names the sequence that took it there.
        const last = drain === null && lifecycle.state === 'offline' ? lifecycle.lastReport : null
        return { statusCode: 202, body: { state: lifecycle.state, ...windowInfo(), startedAt: drain?.startedAt ?? last?.startedAt ?? null, deadline: drain?.windowEndsAt ?? null, drain, ...(last === null ? {} : { report: last }) } }
      }
      try {
        const report = await done
        return { statusCode: 200, body: { state: lifecycle.state, report, connections: ctx.connections() } }
      } catch (err) {
        return conflict(err, lifecycle.state)
      }
    },
    async online (wait) {
      const early = notListening()
      if (early !== null) return early
      if (lifecycle.shuttingDown) return conflict(new ClosingError(lifecycle.state), lifecycle.state)
      try {
        const done = lifecycle.online('admin /online')
        if (!wait) {
          done.catch(() => {})
          return { statusCode: 202, body: { state: lifecycle.state } }
        }
        await done
        return { statusCode: 200, body: { state: lifecycle.state } }
      } catch (err) {
        return { statusCode: err instanceof ClosingError ? 409 : 500, body: { error: 'conflict', message: (err as Error).message, state: lifecycle.state } }
      }
    }
  }
}
