/**
 * @lameduck/node/engine: the transport-agnostic engine under attach(), for
 * lameduck's own transports (@lameduck/grpc). Apps use attach() from
 * @lameduck/node; this entry follows that package's version and may change in
 * any release.
 */
export { Engine } from './engine.ts'
export type { ListenAddress, Transport, TransportFactory, TransportHost } from './engine.ts'
export { resolveOptions } from './options.ts'
export type { AttachOptions, LameduckOptions, ResolvedOptions } from './options.ts'
export type { ConnectionStats } from './connections.ts'
export type { GoingAway, HandleEvents, LameduckHandle } from './handle.ts'
export { COARSE_MS, coarseNow } from './coarse-clock.ts'
export { OpenRequests } from './open-requests.ts'
