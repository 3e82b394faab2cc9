import type { Socket } from 'node:net'

export const kBusy = Symbol('lameduck.busy')
export const kUsed = Symbol('lameduck.used')
const kSeen = Symbol('lameduck.seen')
const kIdleSweeps = Symbol('lameduck.idleSweeps')

/** A socket is closed only after this many sweeps found it idle and unused (≥ 1 s at 500 ms). */
const IDLE_SWEEPS = 2

export interface TrackedSocket extends Socket {
  /** Requests in progress on this connection. */
  [kBusy]: number
  /** A stamp that changes with every request on this connection. */
  [kUsed]: number
  [kSeen]?: number
  /** Sweeps in a row that found this socket idle and unused. */
  [kIdleSweeps]?: number
}

/**
 * Closes keep-alive connections that stay idle while draining. A server closing
 * an idle socket races the client's next request on it (the request is reset),
 * so only sockets that saw no request for two whole sweep intervals are closed:
 * clients keep their busy ("hot") sockets, and those are moved off by the
 * `connection: close` on their next response instead.
 */
export class IdleSweeper {
  readonly #sockets: Set<TrackedSocket>
  readonly #intervalMs: number
  #timer: NodeJS.Timeout | null = null
  closed = 0

  constructor (sockets: Set<TrackedSocket>, intervalMs = 500) {
    this.#sockets = sockets
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
    for (const socket of this.#sockets) {
      const used = socket[kUsed] ?? 0
      if ((socket[kBusy] ?? 0) === 0 && socket[kSeen] === used) {
        socket[kIdleSweeps] = (socket[kIdleSweeps] ?? 0) + 1
        if (socket[kIdleSweeps] >= IDLE_SWEEPS) {
          this.closed++
          socket.destroy()
        }
        continue
      }
      socket[kIdleSweeps] = 0
      socket[kSeen] = used
    }
  }
}
