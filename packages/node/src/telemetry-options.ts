import { InvalidOptionError, type LifecycleObserver } from '@lameduck/core'
import { OpenTelemetryObserver, resolveOpenTelemetry, type OpenTelemetryOptions } from './opentelemetry.ts'
import { exitProcess } from './signal-coordinator.ts'

export interface TelemetryWiring {
  /** The app's observers and the OpenTelemetry one, on by default (a no-op without an SDK); not with `openTelemetry: false`. */
  observers: LifecycleObserver[]
  /** The process's end: after the flush when there is one, else the app's own (or the default). */
  terminate: ((code: 0 | 1) => void) | undefined
  /**
   * The bound on the drain and the close: shutdownTimeoutMs less the flush step, which
   * follows within it. Undefined: the default (window + sidecar + maxRequestMs + slack),
   * and the flush comes on top (`lameduck plan --telemetry-flush-ms` counts it).
   */
  drainBoundMs: unknown
}

/**
 * Fits the OpenTelemetry flush into the signal path without a hook in it: the
 * observer ends its spans and flushes at the engine's close, and `terminate`
 * (what the signal path calls last, clean or forced) waits for that same flush,
 * bounded by flushTimeoutMs, before the process ends. The flush's budget is
 * taken out of a shutdownTimeoutMs the app set, so the whole stays inside it.
 */
export function telemetryWiring (input: { openTelemetry?: OpenTelemetryOptions | false, shutdownTimeoutMs?: unknown, terminate?: (code: 0 | 1) => void, service: string, observers: LifecycleObserver[] }): TelemetryWiring {
  const o = resolveOpenTelemetry(input.openTelemetry)
  // The app's own openTelemetry() observer (in `observers`) takes the place of the default one.
  if (o === false || input.observers.some((x) => x.name === 'opentelemetry')) return { observers: input.observers, terminate: input.terminate, drainBoundMs: input.shutdownTimeoutMs }
  const observer = new OpenTelemetryObserver(o, input.service)
  const observers = [...input.observers, observer]
  if (o.flush === undefined) return { observers, terminate: input.terminate, drainBoundMs: input.shutdownTimeoutMs }
  const total = input.shutdownTimeoutMs
  if (typeof total === 'number' && Number.isFinite(total) && total <= o.flushTimeoutMs) {
    throw new InvalidOptionError('openTelemetry.flushTimeoutMs', `${o.flushTimeoutMs} ms leaves nothing of shutdownTimeoutMs (${total} ms) for the drain; the flush is the last step inside it: raise shutdownTimeoutMs by the flush (lameduck plan --telemetry-flush-ms) or lower flushTimeoutMs`)
  }
  const after = input.terminate
  const terminate = (code: 0 | 1): void => {
    observer.finish(code === 1 ? 'forced exit' : 'exit').finally(() => {
      if (after !== undefined) after(code)
      else if (observer.logger !== null) exitProcess(observer.logger)(code)
      else process.exitCode = code
    }).catch(() => {})
  }
  return { observers, terminate, drainBoundMs: typeof total === 'number' ? total - o.flushTimeoutMs : total }
}
