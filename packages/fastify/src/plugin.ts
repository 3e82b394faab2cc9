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
