// A server that is "down" until the test brings it up, on a port that never
// changes hands: the gate listens on port 0 and resets every connection (the
// client sees ECONNRESET) until open(target), then forwards TCP to the target.
// For "the registry is down when the app starts, then comes up at the same address".
import { connect, createServer, type Server, type Socket } from 'node:net'

export interface Gate {
  port: number
  /** `http://127.0.0.1:<port>` plus `path`. */
  url(path?: string): string
  /** Connections reset while closed. */
  readonly refused: number
  /** From now on, forward every new connection to 127.0.0.1:`targetPort`. */
  open(targetPort: number): void
  close(): Promise<void>
}

export async function gate (): Promise<Gate> {
  let target: number | null = null
  let refused = 0
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    sockets.add(client)
    client.on('close', () => sockets.delete(client)).on('error', () => {})
    if (target === null) { refused++; client.resetAndDestroy(); return }
    const upstream = connect(target, '127.0.0.1')
    sockets.add(upstream)
    // Ends travel through the pipes (a FIN after the last byte); an error resets the other side too.
    upstream.on('close', () => sockets.delete(upstream)).on('error', () => client.resetAndDestroy())
    client.on('error', () => upstream.resetAndDestroy())
    client.pipe(upstream).pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  return {
    port,
    url: (path = '') => `http://127.0.0.1:${port}${path}`,
    get refused () { return refused },
    open (targetPort) { target = targetPort },
    async close () {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
