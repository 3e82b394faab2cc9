import type { Server, Socket } from 'node:net'
import type { TLSSocket } from 'node:tls'
import type { Http2Session } from 'node:http2'
import { IdleSweeper, initTracked, kBusy, type Tracked } from './idle-sweeper.ts'
import { idleCloseMs } from './keep-alive.ts'
import { receivingSockets } from './receiving.ts'

export type Connection = (Socket | Http2Session) & Tracked

const kSession = Symbol('lameduck.h2session')
/** When an HTTP/2 session was opened (ms since the epoch). */
export const kOpenedAt = Symbol('lameduck.openedAt')

export interface ConnectionStats {
  /** Connections that carry requests: HTTP/1 sockets (plain or TLS) and HTTP/2 sessions. */
  open: number
  /** Upgraded connections (WebSocket): never swept; the app closes them on 'goingAway'. */
  upgraded: number
  closedWhileDraining: number
}

function isSession (c: Connection): c is Http2Session & Tracked {
  return (c as { [kSession]?: boolean })[kSession] === true
}

/** TLS servers (node:https, HTTP/2 over TLS) have addContext(); read so, node:tls is not loaded into a plain HTTP app. */
function isTlsServer (server: Server): boolean {
  return typeof (server as { addContext?: unknown }).addContext === 'function'
}

/** HTTP/2 servers emit 'session'; they have updateSettings(), HTTP/1 servers do not. */
export function isHttp2Server (server: Server): boolean {
  return typeof (server as { updateSettings?: unknown }).updateSettings === 'function'
}

/**
 * Tracks the connections that carry requests, per transport: the socket from
 * 'connection' on plain HTTP/1; the TLS socket from 'secureConnection' on
 * HTTPS (the raw TCP socket under it never sees a request, so it would look
 * idle forever); the session on HTTP/2 (h2c and h2), whose streams are the requests.
 */
export class Connections {
  readonly open = new Set<Connection>()
  readonly upgraded = new Set<Socket>()
  readonly sweeper: IdleSweeper<Connection>
  closedWhileDraining = 0
  readonly #server: Server
  readonly #leaving: () => boolean
  readonly #listeners: Array<[string, (...args: any[]) => void]> = []

  constructor (server: Server, leaving: () => boolean) {
    this.#server = server
    this.#leaving = leaving
    // A GOAWAY tells an HTTP/2 client before it sends: two idle sweeps are enough. An HTTP/1
    // client learns only from the close itself, so its connection waits out the advertised timeout.
    const sweeper: IdleSweeper<Connection> = new IdleSweeper(this.open, closeGracefully, {
      idleSweeps: (c) => isSession(c) ? 0 : Math.ceil(idleCloseMs(server) / sweeper.intervalMs) + 1,
      receiving: () => receivingSockets(server)
    })
    this.sweeper = sweeper
    const h2 = isHttp2Server(server)
    if (h2) this.#listen('session', (session: Http2Session) => { this.#track(Object.assign(session, { [kSession]: true, [kOpenedAt]: Date.now() })) })
    if (isTlsServer(server)) {
      // On an HTTP/2 server with allowHTTP1 only the HTTP/1 connections carry requests on the socket.
      this.#listen('secureConnection', (socket: TLSSocket) => { if (!h2 || socket.alpnProtocol !== 'h2') this.#track(socket) })
    } else if (!h2) {
      this.#listen('connection', (socket: Socket) => { this.#track(socket) })
    }
  }

  stats (): ConnectionStats {
    return { open: this.open.size, upgraded: this.upgraded.size, closedWhileDraining: this.closedWhileDraining }
  }

  /** An HTTP/1 socket handed to an 'upgrade' listener: no longer swept, counted apart. */
  upgrade (socket: Socket): void {
    if (!this.open.delete(socket)) return
    this.upgraded.add(socket)
    socket.once('close', () => { this.upgraded.delete(socket) })
  }

  /** HTTP/1 connections with nothing in flight: closing them can race a request the client sends on one. */
  idleKeepAlive (): number {
    const receiving = receivingSockets(this.#server)
    let n = 0
    for (const c of this.open) if (!isSession(c) && (c[kBusy] ?? 0) === 0 && !receiving.has(c)) n++
    return n
  }

  /** Closes every connection with nothing in flight or on its way in (gracefully: GOAWAY on HTTP/2). */
  closeIdle (): void {
    const receiving = receivingSockets(this.#server)
    for (const c of this.open) if ((c[kBusy] ?? 0) === 0 && !receiving.has(c)) closeGracefully(c)
  }

  /** Destroys everything: the forced end of a shutdown. */
  destroyAll (): void {
    for (const c of this.open) c.destroy()
    for (const s of this.upgraded) s.destroy()
  }

  /** Resolves once every connection is gone, or after `boundMs`. */
  async gone (boundMs: number): Promise<void> {
    const deadline = Date.now() + boundMs
    while (this.open.size + this.upgraded.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25))
  }

  detach (): void {
    this.sweeper.stop()
    for (const [event, fn] of this.#listeners) this.#server.off(event, fn)
  }

  #listen<A> (event: string, fn: (arg: A) => void): void {
    this.#server.on(event, fn)
    this.#listeners.push([event, fn])
  }

  #track (c: Connection): void {
    initTracked(c)
    this.open.add(c)
    c.once('close', () => {
      this.open.delete(c)
      if (this.#leaving()) this.closedWhileDraining++
    })
  }
}

/** HTTP/2: GOAWAY (NO_ERROR), open streams complete. HTTP/1: the socket is idle, close it. */
export function closeGracefully (c: Connection): void {
  if (isSession(c)) { if (!c.closed) c.close() } else c.destroy()
}

export { isSession }
