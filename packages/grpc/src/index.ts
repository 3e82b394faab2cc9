/**
 * @lameduck/grpc: lossless online/offline for @grpc/grpc-js servers, on the
 * same engine as attach(). See the package README. The consumer side
 * (lameduckResolver) is `@lameduck/grpc/client`: a server does not load it, and a
 * consumer does not load the engine.
 */
export { attachGrpc } from './attach-grpc.ts'
export type { GrpcAttachOptions } from './options.ts'
export { NotBoundError } from './errors.ts'
export { HEALTH_SERVICE, ServingStatus, healthServiceDefinition, HealthCodecError } from './health-codec.ts'
export type { HealthCheckRequest, HealthCheckResponse, ServingStatusValue } from './health-codec.ts'
export { SUPPORTED_GRPC_JS } from './server-internals.ts'
export { CLOSE_GRACE_MS, MAX_CLOSE_MS } from './transport.ts'
export type { GoingAway, HandleEvents, LameduckHandle } from '@lameduck/node/engine'
export { CONSUMER_HEADER, STATE_HEADER } from '@lameduck/core'
