import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { ADMIN_ROUTES, InvalidOptionError, type Lifecycle, type Logger } from '@lameduck/core'
import { lifecycleBackend, type AdminBackend } from './admin-actions.ts'
import { bearerChecker } from './auth.ts'
import type { ConnectionStats } from './connections.ts'
import { isLoopback } from './host.ts'
import { PROMETHEUS_TEXT } from './metrics-route.ts'
import { booleanParam } from './query.ts'

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

/** The admin listener of one lifecycle: offline/online/status/metrics. */
export function startAdmin (ctx: AdminContext): Promise<AdminServer> {
  return serveAdmin(ctx, lifecycleBackend({ lifecycle: ctx.lifecycle, connections: ctx.connections, status: ctx.status, metrics: ctx.metrics }))
}

/** The admin HTTP surface over a backend: on loopback by default, optional bearer token, every action logged with its caller. */
export async function serveAdmin (opts: AdminListenOptions, backend: AdminBackend): Promise<AdminServer> {
  // An object under `lameduck` like every other lameduck log line: log pipelines map the key once.
  const pino = typeof (opts.logger as Partial<FastifyBaseLogger>).child === 'function' ? (opts.logger as FastifyBaseLogger).child({ lameduck: { component: 'admin' } }) : null
  const log: Logger = pino ?? opts.logger
  if (opts.token !== undefined && !isLoopback(opts.host)) {
    opts.logger.warn({ lameduck: { component: 'admin', host: opts.host } }, `lameduck admin: listening on ${opts.host} over plain HTTP with a token: the token crosses the network in clear text. Keep the admin listener on 127.0.0.1 (preStop and kubectl exec reach it there), or put it behind a TLS-terminating proxy`)
  }
  // requestTimeout 0: `/offline?wait=true` legitimately blocks for the whole window (minutes).
  const admin: FastifyInstance = Fastify({ ...(pino === null ? { logger: false } : { loggerInstance: pino }), bodyLimit: 1024, requestTimeout: 0, return503OnClosing: false, forceCloseConnections: true })

  const check = opts.token === undefined ? undefined : bearerChecker(opts.token)
  admin.addHook('onRequest', async function lameduckAdminAuth (req, reply) {
    if (check !== undefined && !check(req.headers.authorization)) {
      log.warn({ caller: req.ip, method: req.method, url: req.url }, 'lameduck admin: rejected request with a missing or wrong token')
      return reply.code(401).header('www-authenticate', 'Bearer realm="lameduck"').send({ error: 'unauthorized', message: 'send the admin token as: authorization: Bearer <token>' })
    }
  })

  const action = (name: 'offline' | 'online') => async function lameduckAdminAction (req: FastifyRequest, reply: FastifyReply) {
    let wait: boolean
    try {
      wait = booleanParam(req.url, 'wait', false)
    } catch (err) {
      return reply.code(400).send({ error: 'bad request', parameter: 'wait', message: (err as Error).message.replace(/^wait: /, ''), state: backend.state() })
    }
    log.info({ caller: req.ip, action: name, wait, state: backend.state() }, `lameduck admin: ${name} requested`)
    const { statusCode, body } = await backend[name](wait)
    return reply.code(statusCode).send(body)
  }

  // Admin actions are logged explicitly with the caller; Fastify's per-request info logs would be noise.
  const quiet = { logLevel: 'warn' as const }
  // GET changes state here (so `curl` works); Fastify's automatic HEAD twin would too, and HEAD is what probes send.
  const changes = { ...quiet, exposeHeadRoute: false }
  admin.route({ method: ['GET', 'POST'], url: ADMIN_ROUTES.offline, handler: action('offline'), ...changes })
  admin.route({ method: ['GET', 'POST'], url: ADMIN_ROUTES.online, handler: action('online'), ...changes })
  admin.get(ADMIN_ROUTES.status, quiet, async () => await backend.status())
  const metrics = backend.metrics?.bind(backend)
  if (metrics !== undefined) admin.get(ADMIN_ROUTES.metrics, quiet, async (_req, reply) => reply.type(PROMETHEUS_TEXT).send(await metrics()))

  const port = opts.port === 'auto' ? 0 : opts.port
  try {
    // exclusive: in a cluster worker a shared handle would spread admin requests over every worker.
    await admin.listen({ host: opts.host, port, exclusive: true, listenTextResolver: (address) => `lameduck admin listening at ${address}` })
  } catch (err) {
    await admin.close().catch(() => {})
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE') throw new InvalidOptionError('admin.port', `${opts.host}:${port} is already in use (another instance or worker in this pod?). Choose another admin.port, admin.port: 'auto' per process (with clusterAdmin() in a cluster primary), or admin: false to disable the admin listener`, { cause: err })
    if (code === 'EADDRNOTAVAIL') throw new InvalidOptionError('admin.host', `${opts.host} is not an address of this machine. Use '127.0.0.1' or the pod IP`, { cause: err })
    throw err
  }
  const address = admin.server.address()
  const bound = typeof address === 'object' && address !== null ? address.port : port
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host
  return { url: `http://${host}:${bound}`, port: bound, close: () => admin.close() }
}
