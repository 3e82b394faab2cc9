import { type Lifecycle, type LifecycleEvents, type LifecycleStatus, type OfflineReport } from '@lameduck/core'
import type { Engine } from './engine.ts'
import { NotListeningError } from './errors.ts'
import type { ProbeAnswer, ProbeKind } from './probes.ts'

/**
 * Sent when connections that outlive requests should end: `'window'` once the
 * propagation window is over (no consumer routes here any more), `'closing'`
 * when the app closes. Close WebSockets with 1001 Going Away and end
 * server-sent event streams then; the engine never cuts them before.
 */
export interface GoingAway { cause: 'window' | 'closing', upgraded: number, inflight: number }

export type HandleEvents = LifecycleEvents & { goingAway: [GoingAway] }

/** What attach() returns (and what `app.lameduck` is in the Fastify plugin). */
export interface LameduckHandle {
  readonly state: Lifecycle['state']
  readonly warming: boolean
  /** The admin listener's URL, or null when disabled. */
  readonly adminUrl: string | null
  readonly lifecycle: Lifecycle
  /** The probe paths, or false when none are served. */
  readonly routes: { ready: string, live: string } | false
  /** Starts (or joins) the offline sequence. */
  offline(options?: { reason?: string }): Promise<OfflineReport>
  /** Goes online again from draining or offline. */
  online(): Promise<void>
  /** The signal path without a signal: offline sequence, connections go, then the app closes. */
  shutdown(reason?: string): Promise<void>
  status(): LifecycleStatus
  /** A probe's answer, for a framework serving the routes itself. */
  probe(kind: ProbeKind): ProbeAnswer
  /** The metrics path on the app listener (metrics.listener 'app'), or false. */
  readonly metricsPath: string | false
  /** The Prometheus text exposition, for a framework serving the metrics route itself. */
  metrics(): string
  on<K extends keyof HandleEvents>(event: K, listener: (...args: HandleEvents[K]) => void): LameduckHandle
  off<K extends keyof HandleEvents>(event: K, listener: (...args: HandleEvents[K]) => void): LameduckHandle
  /** Detaches from the server: deregisters if registered, stops the admin listener and the signal handlers. */
  close(): Promise<void>
}

/** The handle over an engine: the lifecycle's face plus the engine's probes, status and close. */
export function createHandle (engine: Engine): LameduckHandle {
  const { lifecycle, events } = engine
  const handle: LameduckHandle = {
    get state () { return lifecycle.state },
    get warming () { return lifecycle.warming },
    get adminUrl () { return engine.admin?.url ?? null },
    lifecycle,
    routes: engine.options.routes,
    // Before listen() there is no address to register: an early offline would leave the instance stuck.
    offline: async (opts) => { if (lifecycle.state === 'starting') throw new NotListeningError('draining'); return await lifecycle.offline(opts?.reason ?? 'api') },
    online: async () => { if (lifecycle.state === 'starting') throw new NotListeningError('registering'); await lifecycle.online('api') },
    shutdown: async (reason = 'shutdown()') => { await lifecycle.shutdown(reason); await engine.closeAfterDrain() },
    status: () => engine.status(),
    probe: (kind) => engine.probe(kind),
    metricsPath: engine.options.metrics.listener === 'app' ? engine.options.metrics.path : false,
    metrics: () => engine.metrics.render(),
    on (event, listener) {
      if (event === 'goingAway') events.on('goingAway', listener as (e: GoingAway) => void)
      else lifecycle.on(event, listener as never)
      return handle
    },
    off (event, listener) {
      if (event === 'goingAway') events.off('goingAway', listener as (e: GoingAway) => void)
      else lifecycle.off(event, listener as never)
      return handle
    },
    close: () => engine.close()
  }
  return handle
}
