import type { Server, Socket } from 'node:net'

/** Node's own list of an HTTP/1 server's connections: the one closeIdleConnections() and the headers timeout read. */
const CONNECTIONS_LIST = 'http.server.connections'

interface ParserLike { socket?: Socket | null }
interface ConnectionsList { active: () => ParserLike[] }

/**
 * The HTTP/1 sockets with a request partly received: bytes of a head (or of a
 * body the app no longer reads) that the parser has not turned into a request
 * yet. No request is in flight on such a socket, but it is not idle: closing it
 * destroys the request on its way in. Node keeps this itself, per parser (a
 * message started and not complete); a fresh connection that sent nothing is in
 * that list too, so only sockets that received a byte count.
 *
 * Empty when the server keeps no such list (HTTP/2 servers; an HTTP/1 server
 * before listen()). Looked up on each call: the list appears at listen().
 */
export function receivingSockets (server: Server): ReadonlySet<object> {
  const out = new Set<object>()
  const key = Object.getOwnPropertySymbols(server).find((s) => s.description === CONNECTIONS_LIST)
  const list = key === undefined ? undefined : (server as unknown as Record<symbol, ConnectionsList | undefined>)[key]
  if (typeof list?.active !== 'function') return out
  for (const parser of list.active()) {
    const socket = parser.socket
    if (socket != null && socket.bytesRead > 0) out.add(socket)
  }
  return out
}

/** Whether this Node keeps the list receivingSockets() reads (checked by a test, so a Node that drops it fails loudly). */
export function keepsConnectionsList (server: Server): boolean {
  return Object.getOwnPropertySymbols(server).some((s) => s.description === CONNECTIONS_LIST)
}
