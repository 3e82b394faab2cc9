import type { FastifyInstance } from 'fastify'
import { InvalidOptionError } from '@lameduck/core'
import { attach, type LameduckHandle, type LameduckOptions, type ProbeKind } from '@lameduck/node'

/** What `app.lameduck` exposes: the engine's handle. */
export type LameduckDecorator = LameduckHandle

declare module 'fastify' {
  interface FastifyInstance { lameduck: LameduckDecorator }
}

/**
 * A thin wrapper over @lameduck/node's attach(): the engine validates the
 * options and does the work on `app.server`; Fastify serves the probe routes,
 * lends its logger, and closes through its own hooks.
 */
export async function lameduckPlugin (app: FastifyInstance, input: LameduckOptions): Promise<void> {
  // Checked before attach() starts the admin listener and the signal handlers, which a failed decorate would leak.
  if (app.hasDecorator('lameduck')) throw new InvalidOptionError('plugin', '@lameduck/fastify is already registered on this app; register it once')
  const options = typeof input === 'object' && input !== null
    ? { ...input, logger: app.log, serveRoutes: false, closeApp: () => app.close() }
    : input
  const handle = await attach(app.server, options)
  app.decorate('lameduck', handle)
  // Behind a sidecar, Fastify's 72 s stays: the clients are the sidecar's (see the engine's check).
  if (input.sidecar === undefined || input.sidecar === false) fitKeepAlive(app, handle.lifecycle.window.totalMs)

  if (handle.routes !== false) {
    const route = (kind: ProbeKind) => async function lameduckProbe (_req: unknown, reply: import('fastify').FastifyReply) {
      const { statusCode, body } = handle.probe(kind)
      return reply.code(statusCode).send(body)
    }
    app.get(handle.routes.ready, { logLevel: 'warn' }, route('ready'))
    app.get(handle.routes.live, { logLevel: 'warn' }, route('live'))
  }

  // Read-only, no token, and nothing else of the admin API on the app port.
  if (handle.metricsPath !== false) {
    app.get(handle.metricsPath, { logLevel: 'warn' }, async function lameduckMetrics (_req, reply) {
      return reply.type('text/plain; version=0.0.4; charset=utf-8').send(handle.metrics())
    })
  }

  // A plain app.close() (not a signal or shutdown()) closes now: deregister as a best effort.
  app.addHook('preClose', async function lameduckPreClose () {
    handle.lifecycle.beginClose('app.close()')
  })
  app.addHook('onClose', async function lameduckOnClose () {
    await handle.close()
  })
}

/** Fastify's own default keepAliveTimeout: above AWS ALB's 60 s idle timeout, and above most drain windows. */
const FASTIFY_DEFAULT_KEEP_ALIVE_MS = 72_000
/** Node's own default: what the server gets instead, or the window if that is shorter. */
const NODE_DEFAULT_KEEP_ALIVE_MS = 5_000

/**
 * An idle keep-alive connection a client may hold longer than the window is
 * closed at exit, racing the client's next request on it. Fastify's default
 * (72 s) outlives every window but the longest, so an app that did not choose
 * its own gets Node's 5 s (or the window, if shorter): the engine then has
 * nothing to warn of. An app that passed `keepAliveTimeout` keeps it (72 000
 * explicitly cannot be told from the default, and is changed too).
 */
function fitKeepAlive (app: FastifyInstance, windowMs: number): void {
  const server = app.server as { keepAliveTimeout?: number }
  if (app.initialConfig.keepAliveTimeout !== FASTIFY_DEFAULT_KEEP_ALIVE_MS || server.keepAliveTimeout !== FASTIFY_DEFAULT_KEEP_ALIVE_MS) return
  if (windowMs >= FASTIFY_DEFAULT_KEEP_ALIVE_MS) return
  const fitted = Math.max(1, Math.min(NODE_DEFAULT_KEEP_ALIVE_MS, windowMs))
  server.keepAliveTimeout = fitted
  app.log.debug({ lameduck: { keepAliveTimeout: fitted, windowMs } }, `lameduck: Fastify's default keepAliveTimeout (72 s) outlives the drain window (${windowMs} ms); using ${fitted} ms (pass keepAliveTimeout to Fastify to choose your own)`)
}
