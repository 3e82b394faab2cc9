// Ports are never bound, released and bound again (another test could take the
// port in between): a server listens on port 0 and keeps its port until the
// test closes it.
import type { AddressInfo, Server } from 'node:net'

/** Listens on 127.0.0.1 port 0 and returns the bound port; the server keeps it. */
export async function listen (server: Server, host = '127.0.0.1'): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, host, () => { server.off('error', reject); resolve() })
  })
  return (server.address() as AddressInfo).port
}

/** Closes a server, ending idle keep-alive connections so close() does not wait for them. */
export async function close (server: Server): Promise<void> {
  const http = server as Server & { closeIdleConnections?: () => void }
  const done = new Promise<void>((resolve) => server.close(() => resolve()))
  http.closeIdleConnections?.()
  await done
}

/**
 * For a child process that binds its own port: it listens on 0 and prints a line;
 * this reads the port from the first line that `pattern` matches (group 1).
 */
export async function reportedPort (lines: AsyncIterable<string>, pattern: RegExp): Promise<number> {
  for await (const line of lines) {
    const m = pattern.exec(line)
    if (m?.[1] !== undefined) return Number(m[1])
  }
  throw new Error(`the child never printed a line matching ${String(pattern)}`)
}
