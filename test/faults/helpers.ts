// Helpers for the fault-injection tests: logs captured in memory, a fault proxy
// that sits in front of a registry or an Envoy admin API and fails on command,
// and a provider whose logs are kept.
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { Writable } from 'node:stream'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import pino from 'pino'
import lameduck, { type LameduckOptions } from '@lameduck/fastify'
import { until } from '../helpers.ts'

export { steadyLoad, until } from '../helpers.ts'

export interface LogLine { level: number, msg: string, [key: string]: unknown }

/** A pino logger (debug and up) that keeps every line, parsed. */
export function memoryLog () {
  const lines: LogLine[] = []
  const stream = new Writable({
    write (chunk: Buffer, _enc, done) {
      for (const text of String(chunk).split('\n')) if (text !== '') lines.push(JSON.parse(text) as LogLine)
      done()
    }
  })
  const logger = pino({ level: 'debug' }, stream)
  return {
    logger,
    lines,
    /** Lines whose message matches, at `minLevel` (pino numbers: 30 info, 40 warn, 50 error) or above. */
    find: (re: RegExp, minLevel = 0): LogLine[] => lines.filter((l) => l.level >= minLevel && re.test(l.msg)),
    text: (): string => lines.map((l) => `${l.level} ${l.msg}`).join('\n')
  }
}

export type Log = ReturnType<typeof memoryLog>

/** What the fault proxy does with a request: forward it, or fail in one of these ways. */
export type Fault =
  | 'pass'
  | 'refuse' // close the connection without an answer
  | 'hang' // never answer (until the proxy closes or the mode changes)
  | { status: number, body?: string, type?: string, delayMs?: number }

export interface FaultProxy {
  url: string
  port: number
  /** Decides per request; the default forwards everything. */
  fault: (req: IncomingMessage) => Fault
  /** Requests seen, with the fault applied. */
  seen: Array<{ method: string, url: string, fault: string, at: number }>
  /** Ends every request held by 'hang' (their sockets are destroyed). */
  release(): void
  close(): Promise<void>
}

/** An HTTP proxy in front of `target` (or a plain fake when target is null) that fails on command. */
export async function faultProxy (target: string | null, port = 0): Promise<FaultProxy> {
  const hung = new Set<ServerResponse>()
  const sockets = new Set<Socket>()
  const proxy: FaultProxy = {
    url: '',
    port: 0,
    fault: () => 'pass',
    seen: [],
    release () {
      for (const res of hung) res.socket?.destroy()
      hung.clear()
    },
    close () {
      proxy.release()
      for (const s of sockets) s.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
  const server: Server = createServer((req, res) => {
    const fault = proxy.fault(req)
    proxy.seen.push({ method: req.method ?? '', url: req.url ?? '', fault: typeof fault === 'string' ? fault : String(fault.status), at: Date.now() })
    if (fault === 'refuse') { req.socket.destroy(); return }
    if (fault === 'hang') { hung.add(res); res.on('close', () => hung.delete(res)); req.resume(); return }
    if (fault !== 'pass') {
      req.resume()
      const answer = (): void => { res.writeHead(fault.status, { 'content-type': fault.type ?? 'text/plain' }).end(fault.body ?? '') }
      if (fault.delayMs === undefined) answer()
      else { hung.add(res); setTimeout(() => { hung.delete(res); if (!res.destroyed) answer() }, fault.delayMs) }
      return
    }
    if (target === null) { res.writeHead(404).end(); return }
    const upstream = httpRequest(new URL(req.url ?? '/', target), { method: req.method, headers: { ...req.headers, host: new URL(target).host } }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers)
      up.pipe(res)
    })
    upstream.on('error', () => { res.destroy() })
    req.pipe(upstream)
  })
  server.on('connection', (s) => { sockets.add(s); s.once('close', () => sockets.delete(s)) })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  proxy.port = (server.address() as { port: number }).port
  proxy.url = `http://127.0.0.1:${proxy.port}`
  return proxy
}

export interface LoggedProvider {
  app: FastifyInstance
  url: string
  admin: string
  log: Log
  served: () => number
}

/** A provider like test/helpers' startProvider, with its pino logs kept in memory. Does not wait for `serving`. */
export async function loggedProvider (id: string, options: Partial<LameduckOptions>, log = memoryLog()): Promise<LoggedProvider> {
  const app = Fastify({ loggerInstance: log.logger as unknown as FastifyBaseLogger }) as unknown as FastifyInstance
  await app.register(lameduck, { service: 'orders', host: '127.0.0.1', warmup: 0, signals: false, admin: { port: 0 }, instanceId: id, ...options })
  let served = 0
  app.all('/work', { logLevel: 'warn' }, async (req, reply) => {
    served++
    const ms = Number((req.query as { ms?: string }).ms ?? 0)
    if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms))
    reply.header('x-instance', id)
    return { id }
  })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url, admin: app.lameduck.adminUrl!, log, served: () => served }
}

/** GET /status on the admin listener. */
export async function status (admin: string): Promise<{ state: string, problems: Array<{ step: string, message: string }>, lastOffline: Record<string, unknown> | null, [k: string]: unknown }> {
  const res = await fetch(`${admin}/status`)
  return await res.json() as never
}

export async function waitState (app: FastifyInstance, state: string, timeoutMs = 10_000): Promise<void> {
  await until(() => app.lameduck.state === state, `state ${state} (now ${app.lameduck.state})`, { timeoutMs })
}
