import fp from 'fastify-plugin'
import { lameduckPlugin } from './plugin.ts'

/**
 * The lameduck Fastify plugin: delayed registration, readiness and liveness
 * routes, the admin listener (/offline, /online, /status, /metrics), drain
 * behaviour and signal handling. See the package README.
 */
const lameduck = fp(lameduckPlugin, { fastify: '5.x', name: '@lameduck/fastify' })

export default lameduck
export { lameduck }
export { CONSUMER_HEADER, STATE_HEADER } from '@lameduck/core'
export type { LameduckDecorator } from './plugin.ts'
export type { LameduckOptions, AdminOptions, SidecarOptions } from './options.ts'
