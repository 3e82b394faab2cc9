export const kBusy = Symbol('lameduck.busy')
export const kUsed = Symbol('lameduck.used')
const kSeen = Symbol('lameduck.seen')
const kIdleSweeps = Symbol('lameduck.idleSweeps')

/** A connection is closed only after at least this many sweeps found it idle and unused (>= 1 s at 500 ms). */
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
 * Gives a connection every property the request path and the sweeps write, once,
 * before its first request: its shape is then settled, instead of changing under
 * Node's own code while it serves. Nothing seen yet (-1 matches no stamp).
 */
export function initTracked (c: Tracked): void {
  c[kBusy] = 0
  c[kUsed] = 0
  c[kSeen] = -1
  c[kIdleSweeps] = 0
}

const NONE: ReadonlySet<object> = new Set()

export interface SweeperOptions<T> {
  /** ms between sweeps (500). */
  intervalMs?: number
  /** A monotonic clock in ms (performance.now). */
  now?: () => number
  /** How many idle sweeps in a row close this connection (at least IDLE_SWEEPS). */
  idleSweeps?: (connection: T) => number
  /** Connections receiving a request not parsed yet: not idle, whatever their counters say. */
  receiving?: () => ReadonlySet<object>
}

/** A sweep this late (x the interval) ran after a stalled event loop: it does not count as idle time. */
const LATE_FACTOR = 1.5

/**
 * Closes keep-alive connections that stay idle while draining. A server closing
 * an idle connection races the client's next request on it (the request is
 * reset), so only connections that saw no request for two whole sweep intervals
 * are closed, or longer where the caller says so (HTTP/1: until the Keep-Alive
 * timeout the server advertised ran out): clients keep their busy ("hot")
 * connections, and those are moved off by the drain mark on their next response
 * instead.
 *
 * "Idle" must mean the client sent nothing, not that this process was too busy
 * to read it: after a stalled event loop, timers run before the poll phase reads
 * what arrived meanwhile. So a late sweep counts nothing, and a close is decided
 * again in the check phase (setImmediate), after pending requests were parsed.
 */
export class IdleSweeper<T extends Tracked> {
  readonly #connections: Set<T>
  readonly #close: (connection: T) => void
  readonly #intervalMs: number
  readonly #now: () => number
  #timer: NodeJS.Timeout | null = null
  #lastSweepAt = -1
  closed = 0
  /** Sweeps skipped because they ran late (event-loop stalls seen while draining). */
  late = 0

  readonly #idleSweeps: (connection: T) => number
  readonly #receiving: () => ReadonlySet<object>

  constructor (connections: Set<T>, close: (connection: T) => void, options: SweeperOptions<T> = {}) {
    this.#connections = connections
    this.#close = close
    this.#intervalMs = options.intervalMs ?? 500
    // Read when a sweep runs: the global `performance` loads perf_hooks on first use, and most apps never drain.
    this.#now = options.now ?? (() => performance.now())
    this.#idleSweeps = options.idleSweeps ?? (() => IDLE_SWEEPS)
    this.#receiving = options.receiving ?? (() => NONE)
  }

  get intervalMs (): number { return this.#intervalMs }

  start (): void {
    if (this.#timer !== null) return
    this.#lastSweepAt = -1
    this.sweep()
    this.#timer = setInterval(() => this.sweep(), this.#intervalMs)
    this.#timer.unref()
  }

  stop (): void {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
  }

  /** One pass (the timer's; public for tests). */
  sweep (): void {
    const now = this.#now()
    const late = this.#lastSweepAt >= 0 && now - this.#lastSweepAt > this.#intervalMs * LATE_FACTOR
    this.#lastSweepAt = now
    if (late) {
      this.late++
      return
    }
    const receiving = this.#receiving()
    for (const connection of this.#connections) {
      const used = connection[kUsed] ?? 0
      if (idle(connection, used) && !receiving.has(connection)) {
        connection[kIdleSweeps] = (connection[kIdleSweeps] ?? 0) + 1
        if (connection[kIdleSweeps] >= Math.max(IDLE_SWEEPS, this.#idleSweeps(connection))) setImmediate(() => this.#closeIfStillIdle(connection, used))
        continue
      }
      connection[kIdleSweeps] = 0
      connection[kSeen] = used
    }
  }

  #closeIfStillIdle (connection: T, used: number): void {
    if (!this.#connections.has(connection) || !idle(connection, used) || this.#receiving().has(connection)) return
    this.closed++
    this.#close(connection)
  }
}

function idle (connection: Tracked, used: number): boolean {
  return (connection[kBusy] ?? 0) === 0 && connection[kSeen] === used && (connection[kUsed] ?? 0) === used
}
