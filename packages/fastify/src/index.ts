import fp from 'fastify-plugin'
import { lameduckPlugin } from './plugin.ts'

/**
 * The lameduck Fastify plugin: @lameduck/node's engine on `app.server`, with
 * the probe routes as Fastify routes, `app.log` as its logger, `app.close()`
 * on the signal path and the handle as `app.lameduck`. See the package README.
 */
const lameduck = fp(lameduckPlugin, { fastify: '5.x', name: '@lameduck/fastify' })

export default lameduck
export { lameduck }
export { CONSUMER_HEADER, STATE_HEADER } from '@lameduck/core'
export type { LameduckDecorator } from './plugin.ts'
export type { LameduckOptions, AdminOptions, MetricsOptions, SidecarOptions, SidecarSteps, GoingAway } from '@lameduck/node'
export { NotListeningError } from '@lameduck/node'
