import type { Socket } from 'node:net'

export const kBusy = Symbol('lameduck.busy')
export const kUsed = Symbol('lameduck.used')
const kSeen = Symbol('lameduck.seen')

export interface TrackedSocket extends Socket {
  /** Requests in progress on this connection. */
  [kBusy]: number
  /** A stamp that changes with every request on this connection. */
  [kUsed]: number
  [kSeen]?: number
}

/**
 * Closes keep-alive connections that stay idle while draining. A server closing
 * an idle socket races the client's next request on it (the request is reset),
 * so only sockets that saw no request for a whole sweep interval are closed:
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
        this.closed++
        socket.destroy()
        continue
      }
      socket[kSeen] = used
    }
  }
}
