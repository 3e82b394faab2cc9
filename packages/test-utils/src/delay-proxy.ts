// An HTTP proxy that holds matching requests back before forwarding them: a slow
// network, or a registry call still in flight while something else happens.
import { createServer, request, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface DelayProxy {
  /** The proxy's `host:port` on 127.0.0.1. */
  hostPort: string
  /** `METHOD path` of requests held back right now (not yet forwarded). */
  held: string[]
  close(): Promise<void>
}

/** Proxies to `upstream` (`host:port`), holding each request `delayFor(method, path)` ms first. */
export async function delayProxy (upstream: string, delayFor: (method: string, path: string) => number): Promise<DelayProxy> {
  const [host, port] = upstream.split(':') as [string, string]
  const held: string[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const method = req.method ?? 'GET'
      const path = req.url ?? '/'
      const forward = (): void => {
        const up = request({ host, port, method, path, headers: { ...req.headers, host: upstream } }, (upRes: IncomingMessage) => {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers)
          upRes.pipe(res)
        })
        up.on('error', () => { res.writeHead(502); res.end() })
        up.end(Buffer.concat(chunks))
      }
      const delay = delayFor(method, path)
      if (delay <= 0) { forward(); return }
      const tag = `${method} ${path}`
      held.push(tag)
      setTimeout(() => {
        held.splice(held.indexOf(tag), 1)
        forward()
      }, delay)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    hostPort: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    held,
    close: () => new Promise((resolve) => { server.close(() => resolve()); server.closeAllConnections() })
  }
}
