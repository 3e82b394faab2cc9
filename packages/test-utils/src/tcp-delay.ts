// A TCP proxy on 127.0.0.1 that holds bytes back: the client's for `upMs`, the
// server's for `downMs`, each direction in order. A network with data in flight:
// a server's frame meets client frames already sent that it has not read, and a
// client reads the server's frames late. Protocol-blind (TLS and HTTP/2 pass
// through). A reset is passed on at once, as TCP does: the bytes still held back
// for that side are lost with it. An orderly close (FIN) follows the held bytes.
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net'

export interface TcpDelay {
  port: number
  close(): Promise<void>
}

export interface TcpDelayOptions {
  /** Client → server delay (ms). */
  upMs?: number
  /** Server → client delay (ms). */
  downMs?: number
}

/** Forwards `from`'s bytes to `to` `ms` later; its end likewise; its reset at once. */
function pipeDelayed (from: Socket, to: Socket, ms: number): void {
  const later = (fn: () => void): void => { if (ms <= 0) fn(); else setTimeout(fn, ms) }
  from.on('data', (chunk: Buffer) => { later(() => { if (!to.destroyed) to.write(chunk) }) })
  from.on('end', () => { later(() => { if (!to.destroyed) to.end() }) })
  from.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'ECONNRESET') to.resetAndDestroy()
    else to.destroy()
  })
  from.on('close', () => { later(() => { if (!to.destroyed && !to.writableEnded) to.end() }) })
}

export async function tcpDelay (upstreamPort: number, options: TcpDelayOptions | number = {}): Promise<TcpDelay> {
  const { upMs = 0, downMs = 0 } = typeof options === 'number' ? { upMs: options } : options
  const sockets = new Set<Socket>()
  const server = createServer({ allowHalfOpen: true }, (client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: upstreamPort, allowHalfOpen: true })
    for (const s of [client, upstream]) { sockets.add(s); s.on('close', () => sockets.delete(s)) }
    pipeDelayed(client, upstream, upMs)
    pipeDelayed(upstream, client, downMs)
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
