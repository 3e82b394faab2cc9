// A TCP proxy on 127.0.0.1 that holds the client's bytes back for `upMs` before
// forwarding them, in order (the server's bytes pass at once): a network with
// data in flight, so a server's frame meets client frames already sent that it
// has not read yet. Protocol-blind (TLS and HTTP/2 pass through untouched).
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net'

export interface TcpDelay {
  port: number
  close(): Promise<void>
}

export async function tcpDelay (upstreamPort: number, upMs: number): Promise<TcpDelay> {
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: upstreamPort })
    for (const s of [client, upstream]) { sockets.add(s); s.on('close', () => sockets.delete(s)); s.on('error', () => { client.destroy(); upstream.destroy() }) }
    // Equal delays fire in order, so the stream stays in order.
    client.on('data', (chunk: Buffer) => { setTimeout(() => { if (!upstream.destroyed) upstream.write(chunk) }, upMs) })
    client.on('end', () => { setTimeout(() => upstream.end(), upMs) })
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy()
      server.close(() => resolve())
    })
  }
}
