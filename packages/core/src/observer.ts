import { InvalidOptionError } from './errors.ts'
import type { Lifecycle } from './lifecycle.ts'
import type { Logger } from './logger.ts'
import { show, withMethods } from './validate.ts'

// Telemetry, a readiness gate, Kubernetes events: each works beside the
// Lifecycle on its events ('state', 'phase', 'registered', 'offline', ...)
// instead of adding fields to the state machine.

export interface ObserverContext {
  lifecycle: Lifecycle
  logger: Logger
}

/** Undoes an observer's attach; awaited at close (a flush, a last write). */
export type DetachObserver = () => void | Promise<void>

export interface LifecycleObserver {
  /** Names it in logs and errors, e.g. 'opentelemetry' or 'pod condition'. */
  readonly name: string
  /** Subscribes to the lifecycle; returns what undoes it. Called once, when the engine is built. */
  attach(ctx: ObserverContext): DetachObserver | undefined | void
}

/** Validates an `observers` option: an array of { name, attach() }, names unique. */
export function observers (option: string, value: unknown): LifecycleObserver[] {
  if (value === undefined) return []
  if (!Array.isArray(value)) throw new InvalidOptionError(option, `must be an array of observers ({ name, attach(ctx) }), got ${show(value)}`)
  const names = new Set<string>()
  return value.map((item: unknown, i) => {
    const observer = withMethods<LifecycleObserver>(`${option}[${i}]`, item, ['attach'], 'a lifecycle observer ({ name, attach(ctx) })')
    if (typeof observer.name !== 'string' || observer.name === '') throw new InvalidOptionError(`${option}[${i}].name`, `must be a non-empty string naming the observer, got ${show(observer.name)}`)
    if (names.has(observer.name)) throw new InvalidOptionError(`${option}[${i}]`, `a second observer named '${observer.name}'; pass each observer once`)
    names.add(observer.name)
    return observer
  })
}

/**
 * Attaches each observer; returns one detach that undoes them in reverse order.
 * An observer that throws on attach is a bug in it, not a reason to lose the
 * drain: logged, and the others attach.
 */
export function attachObservers (list: readonly LifecycleObserver[], ctx: ObserverContext): () => Promise<void> {
  const detaches: Array<[string, DetachObserver]> = []
  for (const observer of list) {
    try {
      const detach = observer.attach(ctx)
      if (typeof detach === 'function') detaches.push([observer.name, detach])
    } catch (err) {
      ctx.logger.error({ err, lameduck: { observer: observer.name } }, `lameduck: observer '${observer.name}' failed to attach: ${(err as Error)?.message ?? String(err)}`)
    }
  }
  return async () => {
    for (const [name, detach] of detaches.splice(0).reverse()) {
      try {
        await detach()
      } catch (err) {
        ctx.logger.warn({ err, lameduck: { observer: name } }, `lameduck: observer '${name}' failed to detach: ${(err as Error)?.message ?? String(err)}`)
      }
    }
  }
}
