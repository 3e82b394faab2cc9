import type { Server } from 'node:net'
import { InvalidOptionError } from '@lameduck/core'
import { Engine } from './engine.ts'
import type { LameduckHandle } from './handle.ts'
import { HttpTransport, isAttached } from './http-transport.ts'
import { resolveOptions, type AttachOptions } from './options.ts'

/** The HTTP servers attach() takes: node:http, node:https, node:http2 (h2c and h2). */
export type AttachableServer = Server

/**
 * Attaches the lameduck lifecycle to an HTTP server: connection tracking, the
 * idle sweep, drain marks, in-flight counting, the probe routes, the admin
 * listener and the signal path. The lifecycle starts once the server listens.
 * The engine (engine.ts) is the transport-agnostic part; the HTTP transport
 * (http-transport.ts) is what it knows of the server.
 */
export async function attach (server: AttachableServer, input: AttachOptions): Promise<LameduckHandle> {
  const options = resolveOptions(input, input?.registry?.windows)
  if (typeof server !== 'object' || server === null || typeof server.listen !== 'function') {
    throw new InvalidOptionError('server', 'attach() takes a node:http, node:https or node:http2 server, e.g. attach(http.createServer(app), options)')
  }
  if (isAttached(server)) {
    throw new InvalidOptionError('server', 'lameduck is already attached to this server; attach once (close() the first handle to attach again)')
  }
  const engine = new Engine(options, (host) => new HttpTransport(server, host))
  return await engine.start()
}
