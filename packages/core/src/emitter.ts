/**
 * The event API of lameduck's own objects (the Lifecycle, the engine's
 * 'goingAway'): what an EventEmitter user calls -- on, once, off, emit,
 * listenerCount, listeners, removeAllListeners, and addListener and
 * removeListener, which node:events' once() and on() use -- typed by an event
 * map, with EventEmitter's order and removal rules.
 *
 * Not node:events' EventEmitter, for the app's sake: V8 compiles the inline
 * caches in EventEmitter's constructor, which every request's IncomingMessage
 * and ServerResponse run, for at most four object shapes, counted from its
 * first few calls. Each emitter a library constructs at start-up moves that
 * count; on a lean server two more turned those caches megamorphic, about 700
 * instructions per request (docs/benchmarks.md). This class has no such caches
 * shared with Node.
 */
type Listener<A extends unknown[]> = (...args: A) => void
// Stored untyped: the event map types them at the edge (on, off, emit).
type AnyListener = (...args: any[]) => void
/** A once() listener: the wrapper that runs it, and the listener off() is given. */
interface Once { (...args: any[]): void, listener: AnyListener }

export type EventMap<T> = { [K in keyof T]: unknown[] }

export class Emitter<Events extends EventMap<Events>> {
  readonly #listeners = new Map<keyof Events, AnyListener[]>()

  /** Adds `listener` for `event`, after the ones already there (the same function twice runs twice). */
  on<K extends keyof Events> (event: K, listener: Listener<Events[K]>): this {
    const list = this.#listeners.get(event)
    if (list === undefined) this.#listeners.set(event, [listener]); else list.push(listener)
    return this
  }

  addListener<K extends keyof Events> (event: K, listener: Listener<Events[K]>): this { return this.on(event, listener) }

  /** Adds `listener` for the next `event` only. */
  once<K extends keyof Events> (event: K, listener: Listener<Events[K]>): this {
    const self = this
    const wrapper = function (this: unknown, ...args: Events[K]): void {
      self.off(event, wrapper)
      listener.apply(this, args)
    } as Once
    wrapper.listener = listener
    return this.on(event, wrapper)
  }

  /** Removes the most recently added `listener` for `event` (also one added with once()). */
  off<K extends keyof Events> (event: K, listener: Listener<Events[K]>): this {
    const list = this.#listeners.get(event)
    if (list === undefined) return this
    for (let i = list.length - 1; i >= 0; i--) {
      const l = list[i]!
      if (l === listener || (l as Partial<Once>).listener === listener) {
        if (list.length === 1) this.#listeners.delete(event); else list.splice(i, 1)
        break
      }
    }
    return this
  }

  removeListener<K extends keyof Events> (event: K, listener: Listener<Events[K]>): this { return this.off(event, listener) }

  removeAllListeners (event?: keyof Events): this {
    if (event === undefined) this.#listeners.clear(); else this.#listeners.delete(event)
    return this
  }

  /**
   * Calls the listeners of `event` in order, as they were when it was emitted; a listener
   * that throws stops the rest and throws here (as EventEmitter). True when there were any.
   */
  emit<K extends keyof Events> (event: K, ...args: Events[K]): boolean {
    const list = this.#listeners.get(event)
    if (list === undefined) return false
    if (list.length === 1) list[0]!.apply(this, args)
    else for (const l of list.slice()) l.apply(this, args)
    return true
  }

  listenerCount (event: keyof Events): number { return this.#listeners.get(event)?.length ?? 0 }

  /** The listeners of `event` (a once() listener as given, not its wrapper). */
  listeners<K extends keyof Events> (event: K): Array<Listener<Events[K]>> {
    return (this.#listeners.get(event) ?? []).map((l) => (l as Partial<Once>).listener ?? l)
  }
}
