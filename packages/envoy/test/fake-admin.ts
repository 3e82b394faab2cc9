// A scripted HTTP server standing in for an admin API in client tests: it records every
// request and answers with whatever the test's handler returns.
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Reply { status?: number, body?: string, headers?: Record<string, string>, hang?: boolean }

export interface FakeAdmin {
  url: string
  requests: Array<{ method: string, url: string }>
  close(): Promise<void>
}

export async function fakeAdmin (handler: (req: IncomingMessage) => Reply | Promise<Reply>): Promise<FakeAdmin> {
  const requests: FakeAdmin['requests'] = []
  const server: Server = createServer(async (req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '' })
    const reply = await handler(req)
    if (reply.hang === true) return
    res.writeHead(reply.status ?? 200, { 'content-type': 'text/plain; charset=UTF-8', ...reply.headers })
    res.end(reply.body ?? '')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}

/** A port nothing listens on (bound then released). */
export async function closedPort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
