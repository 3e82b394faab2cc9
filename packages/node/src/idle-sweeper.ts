export const kBusy = Symbol('lameduck.busy')
export const kUsed = Symbol('lameduck.used')
const kSeen = Symbol('lameduck.seen')
const kIdleSweeps = Symbol('lameduck.idleSweeps')

/** A connection is closed only after this many sweeps found it idle and unused (≥ 1 s at 500 ms). */
const IDLE_SWEEPS = 2

/** A connection that carries requests: an HTTP/1 socket (plain or TLS) or an HTTP/2 session. */
export interface Tracked {
  /** Requests in progress on this connection. */
  [kBusy]?: number
  /** A stamp that changes with every request on this connection. */
  [kUsed]?: number
  [kSeen]?: number
  /** Sweeps in a row that found this connection idle and unused. */
  [kIdleSweeps]?: number
}

/**
 * Closes keep-alive connections that stay idle while draining. A server closing
 * an idle connection races the client's next request on it (the request is
 * reset), so only connections that saw no request for two whole sweep intervals
 * are closed: clients keep their busy ("hot") connections, and those are moved
 * off by the drain mark on their next response instead.
 */
export class IdleSweeper<T extends Tracked> {
  readonly #connections: Set<T>
  readonly #close: (connection: T) => void
  readonly #intervalMs: number
  #timer: NodeJS.Timeout | null = null
  closed = 0

  constructor (connections: Set<T>, close: (connection: T) => void, intervalMs = 500) {
    this.#connections = connections
    this.#close = close
    this.#intervalMs = intervalMs
  }

  start (): void {
    if (this.#timer !== null) return
    this.#sweep()
    this.#timer = setInterval(() => this.#sweep(), this.#intervalMs)
    this.#timer.unref()
  }

  stop (): void {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
  }

  #sweep (): void {
    for (const connection of this.#connections) {
      const used = connection[kUsed] ?? 0
      if ((connection[kBusy] ?? 0) === 0 && connection[kSeen] === used) {
        connection[kIdleSweeps] = (connection[kIdleSweeps] ?? 0) + 1
        if (connection[kIdleSweeps] >= IDLE_SWEEPS) {
          this.closed++
          this.#close(connection)
        }
        continue
      }
      connection[kIdleSweeps] = 0
      connection[kSeen] = used
    }
  }
}
