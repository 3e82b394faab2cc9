import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { ClosingError, InvalidOptionError, type Lifecycle, type Logger } from '@lameduck/core'
import { bearerChecker } from './auth.ts'
import type { ConnectionStats } from './connections.ts'
import { renderMetrics } from './metrics.ts'

export interface AdminContext {
  host: string
  port: number
  token: string | undefined
  lifecycle: Lifecycle
  logger: Logger
  connections: () => ConnectionStats
  /** The status document (one builder for every listener). */
  status: () => Record<string, unknown>
}

export interface AdminServer { url: string, port: number, close(): Promise<void> }

interface WaitQuery { wait?: string }

const YES = new Set(['true', '1', 'yes', 'on'])
const NO = new Set(['false', '0', 'no', 'off'])

/** `?wait=`: the usual boolean spellings, any case; absent means no; anything else is null (a 400). */
export function parseWait (value: string | undefined): boolean | null {
  if (value === undefined) return false
  const v = value.toLowerCase()
  return YES.has(v) ? true : NO.has(v) ? false : null
}

function isLoopback (host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.')
}

/** The admin listener: offline/online/status/metrics, on loopback by default, optional bearer token. */
export async function startAdmin (ctx: AdminContext): Promise<AdminServer> {
  const { lifecycle } = ctx
  const pino = typeof (ctx.logger as Partial<FastifyBaseLogger>).child === 'function' ? (ctx.logger as FastifyBaseLogger).child({ lameduck: { component: 'admin' } }) : null
  const log: Logger = pino ?? ctx.logger
  // requestTimeout 0: `/offline?wait=true` legitimately blocks for the whole window (minutes).
  const admin: FastifyInstance = Fastify({ ...(pino === null ? { logger: false } : { loggerInstance: pino }), bodyLimit: 1024, requestTimeout: 0, return503OnClosing: false, forceCloseConnections: true })

  const check = ctx.token === undefined ? undefined : bearerChecker(ctx.token)
  admin.addHook('onRequest', async function lameduckAdminAuth (req, reply) {
    if (check !== undefined && !check(req.headers.authorization)) {
      log.warn({ caller: req.ip, method: req.method, url: req.url }, 'lameduck admin: rejected request with a missing or wrong token')
      return reply.code(401).header('www-authenticate', 'Bearer realm="lameduck"').send({ error: 'unauthorized', message: 'send the admin token as: authorization: Bearer <token>' })
    }
  })

  const windowInfo = () => ({ windowMs: lifecycle.window.totalMs, breakdown: lifecycle.window.breakdown })

  /** The wait flag, or a reply already sent: a bad ?wait= (400), or an app not listening yet (409). */
  function precheck (req: { query: WaitQuery }, reply: import('fastify').FastifyReply): boolean | null {
    const wait = parseWait(req.query.wait)
    if (wait === null) {
      reply.code(400).send({ error: 'bad request', message: `?wait= must be true or false (also 1/0, yes/no, on/off), got '${req.query.wait}'` })
      return null
    }
    // Before listen() the instance has no address to register; an early /offline would leave it stuck.
    if (lifecycle.state === 'starting') {
      reply.code(409).send({ error: 'conflict', message: 'the app is not listening yet: /offline and /online apply once it listens', state: lifecycle.state })
      return null
    }
    return wait
  }

  async function offline (req: { ip: string, query: WaitQuery }, reply: import('fastify').FastifyReply) {
    const wait = precheck(req, reply)
    if (wait === null) return reply
    log.info({ caller: req.ip, action: 'offline', wait, state: lifecycle.state }, 'lameduck admin: offline requested')
    let done
    try {
      done = lifecycle.offline('admin /offline')
    } catch (err) {
      return reply.code(409).send({ error: 'conflict', message: (err as Error).message, state: lifecycle.state })
    }
    if (!wait) {
      done.catch(() => {})
      const drain = lifecycle.drain
      return reply.code(202).send({ state: lifecycle.state, ...windowInfo(), startedAt: drain?.startedAt ?? null, deadline: drain?.windowEndsAt ?? null, drain })
    }
    try {
      const report = await done
      return reply.code(200).send({ state: lifecycle.state, report, connections: ctx.connections() })
    } catch (err) {
      return reply.code(409).send({ error: 'conflict', message: (err as Error).message, state: lifecycle.state })
    }
  }

  async function online (req: { ip: string, query: WaitQuery }, reply: import('fastify').FastifyReply) {
    const wait = precheck(req, reply)
    if (wait === null) return reply
    log.info({ caller: req.ip, action: 'online', wait, state: lifecycle.state }, 'lameduck admin: online requested')
    if (lifecycle.shuttingDown) return reply.code(409).send({ error: 'conflict', message: new ClosingError(lifecycle.state).message, state: lifecycle.state })
    try {
      const done = lifecycle.online('admin /online')
      if (!wait) {
        done.catch(() => {})
        return reply.code(202).send({ state: lifecycle.state })
      }
      await done
      return reply.code(200).send({ state: lifecycle.state })
    } catch (err) {
      return reply.code(err instanceof ClosingError ? 409 : 500).send({ error: 'conflict', message: (err as Error).message, state: lifecycle.state })
    }
  }

  // Admin actions are logged explicitly with the caller; Fastify's per-request info logs would be noise.
  const quiet = { logLevel: 'warn' as const }
  // GET changes state here (so `curl` works); Fastify's automatic HEAD twin would too, and HEAD is what probes send.
  const action = { ...quiet, exposeHeadRoute: false }
  admin.route<{ Querystring: WaitQuery }>({ method: ['GET', 'POST'], url: '/offline', handler: offline, ...action })
  admin.route<{ Querystring: WaitQuery }>({ method: ['GET', 'POST'], url: '/online', handler: online, ...action })
  admin.get('/status', quiet, async () => ctx.status())
  admin.get('/metrics', quiet, async (_req, reply) => {
    return reply.type('text/plain; version=0.0.4; charset=utf-8').send(renderMetrics(lifecycle, ctx.connections()))
  })

  try {
    await admin.listen({ host: ctx.host, port: ctx.port, listenTextResolver: (address) => `lameduck admin listening at ${address}` })
  } catch (err) {
    await admin.close().catch(() => {})
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE') throw new InvalidOptionError('admin.port', `${ctx.host}:${ctx.port} is already in use (another instance in this pod?). Choose another admin.port, or admin: false to disable the admin listener`, { cause: err })
    if (code === 'EADDRNOTAVAIL') throw new InvalidOptionError('admin.host', `${ctx.host} is not an address of this machine. Use '127.0.0.1' or the pod IP`, { cause: err })
    throw err
  }
  if (ctx.token !== undefined && !isLoopback(ctx.host)) {
    log.warn({ host: ctx.host }, `lameduck admin: listening on ${ctx.host} over plain HTTP: the admin token crosses the network in clear text; prefer a loopback admin.host (the preStop hook runs in the pod) or a network you trust`)
  }
  const address = admin.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : ctx.port
  const host = ctx.host.includes(':') ? `[${ctx.host}]` : ctx.host
  return { url: `http://${host}:${port}`, port, close: () => admin.close() }
}
