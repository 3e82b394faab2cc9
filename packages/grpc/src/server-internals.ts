import type { Server, ServerInterceptor } from '@grpc/grpc-js'
import type { Http2SecureServer, Http2Server, ServerHttp2Session } from 'node:http2'
import { InvalidOptionError } from '@lameduck/core'

// What attachGrpc() reads of a grpc-js Server beyond its public API: the ports it
// bound, the HTTP/2 servers and sessions under them, its handlers and its server
// interceptors. They are private in grpc-js's types but have the same shape from
// 1.10 (server interceptors, drain(), unbind()) to 1.14; every field is checked once
// here, so a grpc-js that changed them fails at attachGrpc(), not in the middle of a drain.

type H2Server = Http2Server | Http2SecureServer

interface BoundPortLike {
  mapKey: string
  originalUri: { scheme?: string, path: string }
  completionPromise: Promise<number> | null
  portNumber: number
  listeningServers: Set<H2Server>
}

interface Internals {
  boundPorts: Map<string, BoundPortLike>
  http2Servers: Map<H2Server, { sessions: Set<ServerHttp2Session> }>
  handlers: Map<string, unknown>
  interceptors: ServerInterceptor[]
}

/** The range attachGrpc() supports, for messages and the README. */
export const SUPPORTED_GRPC_JS = '@grpc/grpc-js >=1.10.0 <2 (tested on 1.14)'

const FIELDS = [['boundPorts', Map], ['http2Servers', Map], ['handlers', Map], ['interceptors', Array]] as const

/** The private fields, checked; throws when the Server is not a grpc-js Server of a supported version. */
export function internals (server: Server): Internals {
  if (typeof server !== 'object' || server === null || typeof (server as { bindAsync?: unknown }).bindAsync !== 'function') {
    throw new InvalidOptionError('server', 'attachGrpc() takes a @grpc/grpc-js Server, e.g. attachGrpc(new grpc.Server(), options)')
  }
  for (const [name, type] of FIELDS) {
    const value = (server as unknown as Record<string, unknown>)[name]
    if (!(value instanceof type)) throw new InvalidOptionError('server', `this Server has no ${name} ${type === Map ? 'map' : 'array'}: attachGrpc() needs ${SUPPORTED_GRPC_JS}`)
  }
  return server as unknown as Internals
}

/** One port the server listens on. */
export interface Binding {
  /** grpc-js's key for the port, as drain() and unbind() take it, e.g. 'dns:127.0.0.1:50051'. */
  key: string
  /** What bindAsync() was given, e.g. '0.0.0.0:0'. */
  requested: string
  port: number
  /** The address an HTTP/2 server under it listens on, e.g. '0.0.0.0'. */
  address: string
}

/** The ports bound so far, and how many bindAsync() calls are still under way. */
export function bindings (server: Server): { bound: Binding[], pending: number } {
  const bound: Binding[] = []
  let pending = 0
  for (const p of internals(server).boundPorts.values()) {
    if (p.completionPromise !== null) { pending++; continue }
    const listening = [...p.listeningServers].find((s) => s.listening)
    const address = listening?.address()
    if (listening === undefined || typeof address !== 'object' || address === null) continue
    bound.push({ key: p.mapKey, requested: p.originalUri.path, port: p.portNumber, address: address.address })
  }
  return { bound, pending }
}

/** Whether `binding` is the one `name` (as given to bindAsync, with or without its scheme) names. */
export function names (binding: Binding, name: string): boolean {
  const bare = name.replace(/^dns:/, '')
  return binding.key === name || binding.key === `dns:${bare}` || binding.requested === bare
}

/** Every HTTP/2 server of the grpc-js server (one per bound address, and connection injectors'). */
export function http2Servers (server: Server): H2Server[] {
  return [...internals(server).http2Servers.keys()]
}

/** Every open HTTP/2 session (client connection). */
export function sessions (server: Server): ServerHttp2Session[] {
  const out: ServerHttp2Session[] = []
  for (const info of internals(server).http2Servers.values()) for (const s of info.sessions) out.push(s)
  return out
}

/** The services the server has handlers for ('pkg.Service'), from the method paths ('/pkg.Service/Method'). */
export function serviceNames (server: Server): Set<string> {
  const out = new Set<string>()
  for (const path of internals(server).handlers.keys()) {
    const slash = path.indexOf('/', 1)
    if (path.startsWith('/') && slash > 1) out.add(path.slice(1, slash))
  }
  return out
}

/**
 * Adds an interceptor around every call (the last in grpc-js's list wraps the
 * others, so it sees each call first and its end last). Returns the remover.
 */
export function addInterceptor (server: Server, interceptor: ServerInterceptor): () => void {
  const list = internals(server).interceptors
  list.push(interceptor)
  return () => {
    const at = list.indexOf(interceptor)
    if (at !== -1) list.splice(at, 1)
  }
}
