import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2'
import type { Server, Socket } from 'node:net'
import { memoryRegistry, silentLogger, type MemoryRegistry } from '@lameduck/core'
import { attach, type AttachOptions, type LameduckHandle } from '@lameduck/node'
import { createTransportServer, urlOf, type Transport } from './transports.ts'

export interface Started {
  server: Server
  lameduck: LameduckHandle
  registry: MemoryRegistry
  url: string
  admin: string
  /** Requests the app's own handler saw (probe routes never reach it). */
  seen: string[]
  /** Every TCP socket the server accepted (stop() destroys them). */
  sockets: Set<Socket>
}

/** The app: /hello, and /slow?ms=N which answers after N ms. */
export function appHandler (seen: string[] = []) {
  return (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse): void => {
    if (res.headersSent) return // answered by a listener the test added
    seen.push(req.url ?? '')
    const url = new URL(req.url ?? '/', 'http://x')
    const reply = (body: unknown): void => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(body)) }
    if (url.pathname === '/slow') {
      const ms = Number(url.searchParams.get('ms') ?? 500)
      setTimeout(() => reply({ slept: ms }), ms)
      return
    }
    if (url.pathname === '/hello') { reply({ hello: 'world' }); return }
    res.statusCode = 404
    res.end()
  }
}

/** A server of the transport's kind (default plain HTTP) with attach() on 127.0.0.1: memory registry, small windows, admin on a free port. */
export async function startServer (options: Partial<AttachOptions> = {}, transport: Transport = 'http'): Promise<Started> {
  const registry = (options.registry as MemoryRegistry | undefined) ?? memoryRegistry()
  const seen: string[] = []
  const server = createTransportServer(transport, appHandler(seen))
  const sockets = new Set<Socket>()
  server.on('connection', (socket: Socket) => { sockets.add(socket); socket.once('close', () => sockets.delete(socket)) })
  const lameduck = await attach(server, {
    service: 'orders',
    host: '127.0.0.1',
    registry,
    windows: { clientFetchMs: 300 },
    warmupMs: 0,
    signals: false,
    admin: { port: 0 },
    logger: silentLogger,
    ...options
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, lameduck, registry, url: urlOf(transport, server), admin: lameduck.adminUrl!, seen, sockets }
}

/** Closes the server and detaches. */
export async function stop (s: Started): Promise<void> {
  await s.lameduck.close()
  const closed = new Promise<void>((resolve) => s.server.close(() => resolve()))
  for (const socket of s.sockets) socket.destroy()
  await closed
}

export { until } from '@lameduck/test-utils'
