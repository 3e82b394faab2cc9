// An address that refuses connections, for "nothing listens there" tests, without
// the bind-then-release race (another test could take a released port).
//
// The port is the local end of a connection we keep open: the kernel holds it for
// that socket (listen(0) never hands it out, listen(port) fails with EADDRINUSE),
// and since nothing listens on it a connect gets a RST: ECONNREFUSED, exactly what
// a stopped app gives. packages/test-utils/test/ports.test.ts checks both.
import { connect, createServer, type Server, type Socket } from 'node:net'
import { once } from 'node:events'

export interface DeadPort {
  /** A port on 127.0.0.1 that refuses every connection while this is open. */
  port: number
  /** `http://127.0.0.1:<port>` plus `path`. */
  url(path?: string): string
  close(): Promise<void>
}

export async function deadPort (): Promise<DeadPort> {
  const accepted: Socket[] = []
  const holder: Server = createServer((s) => { s.on('error', () => {}); accepted.push(s) })
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
  const socket = connect((holder.address() as { port: number }).port, '127.0.0.1')
  socket.on('error', () => {})
  await once(socket, 'connect')
  const port = socket.localPort!
  return {
    port,
    url: (path = '') => `http://127.0.0.1:${port}${path}`,
    async close () {
      socket.destroy()
      for (const s of accepted) s.destroy()
      await new Promise<void>((resolve) => holder.close(() => resolve()))
    }
  }
}
