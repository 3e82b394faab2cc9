// The adapters the contract suite runs against: each starts an app with /hello and
// /slow?ms=N on the given transport with lameduck attached, the way a user would.
import type { Server, Socket } from 'node:net'
import express from 'express'
import Fastify from 'fastify'
import Koa from 'koa'
import lameduckPlugin from '@lameduck/fastify'
import { attach, type AttachOptions, type LameduckHandle } from '@lameduck/node'
// The transport harness of @lameduck/node's own tests (moves to the shared test-utils workspace).
import { createTransportServer, tlsMaterial, urlOf, type Handler, type Transport } from '../../packages/node/test/transports.ts'

export interface Started {
  url: string
  lameduck: LameduckHandle
  close(): Promise<void>
}

export interface Adapter {
  name: string
  /** Why a transport does not apply, or undefined. */
  unsupported?(transport: Transport): string | undefined
  start(transport: Transport, options: AttachOptions): Promise<Started>
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The servers' keep-alive timeout, below the window as lameduck asks: the hint (timeout=3)
 * makes undici drop an idle connection 1 s after its last response, before the window ends.
 */
const KEEP_ALIVE_MS = 3_000

/** attach() to a server of the transport's kind around `handler`; close() detaches and ends every socket. */
async function attached (transport: Transport, handler: Handler, options: AttachOptions): Promise<Started> {
  const server: Server = createTransportServer(transport, handler)
  ;(server as { keepAliveTimeout?: number }).keepAliveTimeout = KEEP_ALIVE_MS
  const sockets = new Set<Socket>()
  server.on('connection', (s: Socket) => { sockets.add(s); s.once('close', () => sockets.delete(s)) })
  const lameduck = await attach(server, options)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: urlOf(transport, server),
    lameduck,
    async close () {
      await lameduck.close()
      const closed = new Promise<void>((resolve) => { if (server.listening) server.close(() => resolve()); else resolve() })
      for (const s of sockets) s.destroy()
      await closed
    }
  }
}

const node: Adapter = {
  name: 'node',
  start: (transport, options) => attached(transport, (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const reply = (): void => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ path: url.pathname })) }
    if (url.pathname === '/slow') { sleep(Number(url.searchParams.get('ms') ?? 0)).then(reply, reply); return }
    if (url.pathname === '/hello') { reply(); return }
    res.statusCode = 404
    res.end()
  }, options)
}

const expressAdapter: Adapter = {
  name: 'express',
  // Express rewrites the prototypes of node:http's request and response; it does not run on node:http2.
  unsupported: (transport) => transport === 'h2c' || transport === 'h2' ? 'Express 5 does not run on node:http2' : undefined,
  start (transport, options) {
    const app = express()
    app.get('/hello', (_req, res) => { res.json({ path: '/hello' }) })
    app.get('/slow', async (req, res) => { await sleep(Number(req.query.ms ?? 0)); res.json({ path: '/slow' }) })
    return attached(transport, app as unknown as Handler, options)
  }
}

const koa: Adapter = {
  name: 'koa',
  start (transport, options) {
    const app = new Koa()
    app.use(async (ctx) => {
      if (ctx.path === '/slow') await sleep(Number(ctx.query.ms ?? 0))
      if (ctx.path === '/slow' || ctx.path === '/hello') ctx.body = { path: ctx.path }
    })
    return attached(transport, app.callback() as Handler, options)
  }
}

const fastify: Adapter = {
  name: 'fastify',
  async start (transport, options) {
    const tls = transport === 'https' || transport === 'h2' ? tlsMaterial() : undefined
    const h2 = transport === 'h2c' || transport === 'h2'
    const app = Fastify({ logger: false, keepAliveTimeout: KEEP_ALIVE_MS, ...(h2 ? { http2: true } : {}), ...(tls ? { https: tls } : {}) } as Parameters<typeof Fastify>[0])
    const { logger: _logger, ...rest } = options
    await app.register(lameduckPlugin, rest)
    app.get('/hello', async () => ({ path: '/hello' }))
    app.get('/slow', async (req) => { await sleep(Number((req.query as { ms?: string }).ms ?? 0)); return { path: '/slow' } })
    const url = await app.listen({ host: '127.0.0.1', port: 0 })
    return { url, lameduck: app.lameduck, close: () => app.close() }
  }
}

export const ADAPTERS: Adapter[] = [fastify, node, expressAdapter, koa]
