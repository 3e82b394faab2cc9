import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { once } from 'node:events'
import { ADMIN_ROUTES, InvalidOptionError, redactedErrorCopy, redactText, type Lifecycle, type Logger } from '@lameduck/core'
import { lifecycleBackend, type AdminBackend } from './admin-actions.ts'
import { browserRefusal } from './admin-guard.ts'
import { bearerChecker } from './auth.ts'
import type { ConnectionStats } from './connections.ts'
import { isLoopback } from './host.ts'
import { PROMETHEUS_TEXT } from './metrics-route.ts'
import { booleanParam } from './query.ts'
import { http } from './builtins.ts'

export interface AdminListenOptions {
  host: string
  /** 0 or 'auto': a free port of this process's own (never shared with cluster workers). */
  port: number | 'auto'
  token: string | undefined
  logger: Logger
}

export interface AdminContext extends AdminListenOptions {
  lifecycle: Lifecycle
  connections: () => ConnectionStats
  /** The status document (one builder for every listener). */
  status: () => Record<string, unknown>
  /** The Prometheus text; default: none (404). */
  metrics?: () => string | Promise<string>
}

export interface AdminServer { url: string, port: number, close(): Promise<void> }

/** A request body the admin reads at most: its actions take no body, so this is only room for a client's `{}`. */
const BODY_LIMIT = 1024
/** The body types a client may send (and the admin ignores); anything else is refused with 415. */
const BODY_TYPES = new Set(['application/json', 'text/plain'])

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>
interface Route { methods: readonly string[], handler: Handler }

/** The admin listener of one lifecycle: offline/online/status/metrics. */
export function startAdmin (ctx: AdminContext): Promise<AdminServer> {
  return serveAdmin(ctx, lifecycleBackend({ lifecycle: ctx.lifecycle, connections: ctx.connections, status: ctx.status, metrics: ctx.metrics }))
}

/**
 * The admin HTTP surface over a backend: on loopback by default, optional bearer
 * token, every action logged with its caller. Plain node:http, not a framework:
 * the engine runs inside apps of every framework, and a second one booted in
 * their process is dependencies and startup they did not ask for (booting a
 * Fastify instance made an unrelated h2c server allocate 14 % more per request).
 */
export async function serveAdmin (opts: AdminListenOptions, backend: AdminBackend): Promise<AdminServer> {
  const log = adminLogger(opts.logger)
  if (opts.token !== undefined && !isLoopback(opts.host)) {
    opts.logger.warn({ lameduck: { component: 'admin', host: opts.host } }, `lameduck admin: listening on ${opts.host} over plain HTTP with a token: the token crosses the network in clear text. Keep the admin listener on 127.0.0.1 (preStop and kubectl exec reach it there), or put it behind a TLS-terminating proxy`)
  }
  const routes = adminRoutes(backend, log)
  const check = opts.token === undefined ? undefined : bearerChecker(opts.token)

  const handle = adminHandler(opts.host, routes, check, log)
  // requestTimeout 0: `/offline?wait=true` legitimately blocks for the whole window (minutes).
  const server = http().createServer({ requestTimeout: 0 }, (req, res) => {
    handle(req, res).catch((err: Error) => {
      const safe = redactedErrorCopy(err)
      log.error({ err: safe, method: req.method, url: redactText(req.url ?? '') }, `lameduck admin: ${req.method} ${redactText(req.url ?? '')} failed: ${safe.message}`)
      if (!res.headersSent) send(res, 500, { error: 'internal error', message: safe.message })
      else res.destroy()
    })
  })
  const bound = await listenAdmin(server, opts)
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host
  const url = `http://${host}:${bound}`
  log.info({ url }, `lameduck admin listening at ${url}`)
  return { url, port: bound, close: () => closeServer(server) }
}

/** One admin request: web pages refused, then the token, then the route, its method and body. */
function adminHandler (bindHost: string, routes: Record<string, Route>, check: ((header: string | undefined) => boolean) | undefined, log: Logger): Handler {
  return async function handle (req, res) {
    // A web page never gets to act or read, whatever token a browser may hold.
    const browser = browserRefusal(req, bindHost)
    if (browser !== null) {
      log.warn({ caller: req.socket.remoteAddress, method: req.method, url: redactText(req.url ?? ''), why: browser }, `lameduck admin: refused ${browser}`)
      return refuse(req, res, 403, { error: 'forbidden', message: `the admin API does not answer web pages: ${browser}` })
    }
    // The token next: an unauthenticated caller learns nothing, not even which routes exist.
    if (check !== undefined && !check(req.headers.authorization)) {
      log.warn({ caller: req.socket.remoteAddress, method: req.method, url: req.url }, 'lameduck admin: rejected request with a missing or wrong token')
      res.setHeader('www-authenticate', 'Bearer realm="lameduck"')
      return refuse(req, res, 401, { error: 'unauthorized', message: 'send the admin token as: authorization: Bearer <token>' })
    }
    const url = req.url ?? '/'
    const q = url.indexOf('?')
    const path = q === -1 ? url : url.slice(0, q)
    const route = Object.hasOwn(routes, path) ? routes[path] : undefined
    if (route === undefined) {
      return refuse(req, res, 404, { error: 'not found', message: `no admin route ${req.method} ${path}; the routes are ${Object.keys(routes).join(', ')}` })
    }
    if (!route.methods.includes(req.method ?? '')) {
      res.setHeader('allow', route.methods.join(', '))
      return refuse(req, res, 405, { error: 'method not allowed', message: `${path} takes ${route.methods.join(' or ')}` })
    }
    const bodyError = await readBody(req)
    if (bodyError !== null) return refuse(req, res, bodyError.statusCode, bodyError.body)
    await route.handler(req, res)
  }
}

/** Binds the admin listener (exclusively); a taken port or a foreign address is an error naming the option. Returns the bound port. */
async function listenAdmin (server: Server, opts: AdminListenOptions): Promise<number> {
  const port = opts.port === 'auto' ? 0 : opts.port
  try {
    // exclusive: in a cluster worker a shared handle would spread admin requests over every worker.
    server.listen({ host: opts.host, port, exclusive: true })
    await once(server, 'listening')
  } catch (err) {
    server.close()
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE') throw new InvalidOptionError('admin.port', `${opts.host}:${port} is already in use (another instance or worker in this pod?). Choose another admin.port, admin.port: 'auto' per process (with clusterAdmin() in a cluster primary), or admin: false to disable the admin listener`, { cause: err })
    if (code === 'EADDRNOTAVAIL') throw new InvalidOptionError('admin.host', `${opts.host} is not an address of this machine. Use '127.0.0.1' or the pod IP`, { cause: err })
    throw err
  }
  const address = server.address()
  return typeof address === 'object' && address !== null ? address.port : port
}

/** The routes: GET changes state on /offline and /online (so `curl` works); HEAD never does (probes send it). */
function adminRoutes (backend: AdminBackend, log: Logger): Record<string, Route> {
  const action = (name: 'offline' | 'online'): Handler => async (req, res) => {
    let wait: boolean
    try {
      wait = booleanParam(req.url ?? '', 'wait', false)
    } catch (err) {
      return send(res, 400, { error: 'bad request', parameter: 'wait', message: (err as Error).message.replace(/^wait: /, ''), state: backend.state() })
    }
    log.info({ caller: req.socket.remoteAddress, action: name, wait, state: backend.state() }, `lameduck admin: ${name} requested`)
    const { statusCode, body } = await backend[name](wait)
    send(res, statusCode, body)
  }
  const routes: Record<string, Route> = {
    [ADMIN_ROUTES.offline]: { methods: ['GET', 'POST'], handler: action('offline') },
    [ADMIN_ROUTES.online]: { methods: ['GET', 'POST'], handler: action('online') },
    [ADMIN_ROUTES.status]: { methods: ['GET', 'HEAD'], handler: async (req, res) => { send(res, 200, await backend.status(), req.method === 'HEAD') } }
  }
  const metrics = backend.metrics?.bind(backend)
  if (metrics !== undefined) {
    routes[ADMIN_ROUTES.metrics] = {
      methods: ['GET', 'HEAD'],
      handler: async (req, res) => { reply(res, 200, PROMETHEUS_TEXT, await metrics(), req.method === 'HEAD') }
    }
  }
  return routes
}

/**
 * Reads and drops the request body: the actions take none, so only a small one of
 * a plain type is accepted (a client's `{}`). Returns the refusal, or null.
 */
async function readBody (req: IncomingMessage): Promise<{ statusCode: number, body: Record<string, unknown> } | null> {
  if (!announcesBody(req)) return null
  const type = (req.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase()
  if (!BODY_TYPES.has(type)) {
    return { statusCode: 415, body: { error: 'unsupported media type', message: `the admin routes take no body; send none (or a small application/json or text/plain one), got ${type === '' ? 'no content-type' : type}` } }
  }
  const tooLarge = { statusCode: 413, body: { error: 'payload too large', message: `the admin routes take no body; at most ${BODY_LIMIT} bytes are read` } }
  const length = req.headers['content-length']
  if (length !== undefined && Number(length) > BODY_LIMIT) return tooLarge
  return await withinLimit(req) ? null : tooLarge
}

/** Whether the request says a body follows (a length above 0, or chunked). */
function announcesBody (req: IncomingMessage): boolean {
  const length = req.headers['content-length']
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/**
 * Reads the body to its end, or stops (paused, not destroyed: the refusal must still
 * reach the client on this socket) once it passes BODY_LIMIT.
 */
function withinLimit (req: IncomingMessage): Promise<boolean> {
  return new Promise((resolve, reject) => {
    let read = 0
    const done = (ok: boolean): void => {
      req.off('data', onData).off('end', onEnd).off('error', onError)
      resolve(ok)
    }
    const onData = (chunk: Buffer): void => {
      read += chunk.length
      if (read > BODY_LIMIT) { req.pause(); done(false) }
    }
    const onEnd = (): void => { done(true) }
    const onError = (err: Error): void => { req.off('data', onData).off('end', onEnd); reject(err) }
    req.on('data', onData).on('end', onEnd).on('error', onError)
  })
}

/** Answers a refusal: the rest of an unread body is not worth reading, so the connection closes after it. */
function refuse (req: IncomingMessage, res: ServerResponse, statusCode: number, body: Record<string, unknown>): void {
  if (announcesBody(req) && !req.complete) res.setHeader('connection', 'close')
  send(res, statusCode, body)
}

function send (res: ServerResponse, statusCode: number, body: unknown, head = false): void {
  reply(res, statusCode, 'application/json; charset=utf-8', JSON.stringify(body), head)
}

function reply (res: ServerResponse, statusCode: number, type: string, text: string, head: boolean): void {
  res.statusCode = statusCode
  res.setHeader('content-type', type)
  res.setHeader('content-length', Buffer.byteLength(text))
  if (head) res.end(); else res.end(text)
}

/** Closes the listener and every connection on it, a pending `/offline?wait=true` included (as the app is going away). */
async function closeServer (server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()))
  server.closeAllConnections()
  await closed
}

/** An object under `lameduck` like every other lameduck log line: log pipelines map the key once. */
function adminLogger (logger: Logger): Logger {
  const child = (logger as { child?: (bindings: object) => Logger }).child
  return typeof child === 'function' ? child.call(logger, { lameduck: { component: 'admin' } }) : logger
}
