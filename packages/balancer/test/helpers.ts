// Shared test helpers: real node:http upstreams on 127.0.0.1, a logger that
// records, pick counting, and condition polling.
import { createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { once } from 'node:events'
import { warmupMetadata } from '@lameduck/core'
import { until } from '@lameduck/test-utils'
import type { Instance, Logger } from '@lameduck/core'
import type { TestContext } from 'node:test'
import type { Balancer } from '../src/index.ts'

export interface Received { method: string, url: string, headers: IncomingMessage['headers'], body: string }

export interface Upstream {
  name: string
  port: number
  address: string
  requests: Received[]
  /** Sockets open to this upstream right now. */
  openConnections(): number
  /** Replaces the default reply (200, body = name). */
  reply: (req: IncomingMessage, res: ServerResponse, body: string) => void
  close(): Promise<void>
}

export async function upstream (name: string, options: { keepAliveTimeout?: number } = {}): Promise<Upstream> {
  const sockets = new Set<import('node:net').Socket>()
  const requests: Received[] = []
  const up: Upstream = {
    name,
    port: 0,
    address: '',
    requests,
    openConnections: () => sockets.size,
    reply: (_req, res) => { res.end(name) },
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
      return closing
    }
  }
  let closing: Promise<void> | undefined
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString()
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body })
      up.reply(req, res, body)
    })
  })
  server.on('connection', (socket) => { sockets.add(socket); socket.once('close', () => sockets.delete(socket)) })
  server.keepAliveTimeout = options.keepAliveTimeout ?? 1_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  up.port = (server.address() as { port: number }).port
  up.address = `127.0.0.1:${up.port}`
  return up
}

/** A port nothing listens on: bound, then released. */
export async function closedPort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return port
}

export function recordingLogger (): { logger: Logger, warnings: { obj: Record<string, unknown>, msg: string | undefined }[] } {
  const warnings: { obj: Record<string, unknown>, msg: string | undefined }[] = []
  const noop = (): void => {}
  return { logger: { debug: noop, info: noop, error: noop, warn: (obj, msg) => { warnings.push({ obj: obj as Record<string, unknown>, msg }) } }, warnings }
}

/** Picks `n` times and returns the share each instance id got. */
export function shares (balancer: Balancer, service: string, n: number): Record<string, number> {
  const counts: Record<string, number> = {}
  for (let i = 0; i < n; i++) {
    const id = balancer.pick(service).id
    counts[id] = (counts[id] ?? 0) + 1
  }
  for (const id of Object.keys(counts)) counts[id] = counts[id]! / n
  return counts
}

/** An instance with lameduck warmup metadata. */
export function instance (id: string, opts: { registeredAt: number, warmupMs: number, weight?: number, port?: number }): Instance {
  return {
    id,
    service: 'orders',
    host: '127.0.0.1',
    port: opts.port ?? 10_000 + id.length,
    status: 'UP',
    metadata: warmupMetadata({ registeredAt: opts.registeredAt, warmupMs: opts.warmupMs, weight: opts.weight ?? 100 })
  }
}

/** Closes `thing` when the test ends, pass or fail (a failed assertion must not leave servers running). */
export function closeAfter<T extends { close(): Promise<unknown> }> (t: TestContext, thing: T): T {
  t.after(async () => { await thing.close() })
  return thing
}

export async function waitFor (what: string, cond: () => boolean, timeoutMs = 5_000): Promise<void> {
  await until(cond, what, { timeoutMs, intervalMs: 5 })
}
