import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { memoryRegistry, silentLogger, type MemoryRegistry } from '@lameduck/core'
import { attach, type AttachOptions, type LameduckHandle } from '@lameduck/node'

export interface Started {
  server: Server
  lameduck: LameduckHandle
  registry: MemoryRegistry
  url: string
  admin: string
  /** Requests the app's own handler saw (probe routes never reach it). */
  seen: string[]
}

/** The app: /hello, and /slow?ms=N which answers after N ms. */
export function appHandler (seen: string[] = []) {
  return (req: IncomingMessage, res: ServerResponse): void => {
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

/** A plain node:http server with attach() on 127.0.0.1: memory registry, small windows, admin on a free port. */
export async function startServer (options: Partial<AttachOptions> = {}): Promise<Started> {
  const registry = (options.registry as MemoryRegistry | undefined) ?? memoryRegistry()
  const seen: string[] = []
  const server = createServer(appHandler(seen))
  const lameduck = await attach(server, {
    service: 'orders',
    host: '127.0.0.1',
    registry,
    windows: { clientFetchMs: 300 },
    warmup: 0,
    signals: false,
    admin: { port: 0 },
    logger: silentLogger,
    ...options
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return { server, lameduck, registry, url: `http://127.0.0.1:${port}`, admin: lameduck.adminUrl!, seen }
}

/** Closes the server and detaches. */
export async function stop (s: Started): Promise<void> {
  s.server.closeAllConnections()
  await new Promise<void>((resolve) => s.server.close(() => resolve()))
  await s.lameduck.close()
}

/** Polls `fn` until it returns a truthy value or the deadline passes. */
export async function until<T> (fn: () => T | Promise<T>, what: string, timeoutMs = 5_000, intervalMs = 10): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await fn()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}
