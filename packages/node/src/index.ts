/**
 * @lameduck/node: the HTTP drain engine. attach(server, options) gives any
 * node:http, node:https or node:http2 server lossless online/offline: delayed
 * registration, probe routes, the admin listener, drain marks, the idle sweep
 * and the signal path. See the package README.
 */
export { attach } from './attach.ts'
export { clusterAdmin } from './cluster.ts'
export type { ClusterAdminOptions } from './cluster.ts'
export { NotListeningError } from './errors.ts'
export type { AttachableServer } from './attach.ts'
export type { GoingAway, HandleEvents, LameduckHandle } from './handle.ts'
export type { ConnectionStats } from './connections.ts'
export type { ProbeAnswer, ProbeKind } from './probes.ts'
export type { AttachOptions, LameduckOptions, AdminOptions, MetricsOptions, PromRegistryLike, SidecarOptions, SidecarSteps } from './options.ts'
export { CONSUMER_HEADER, STATE_HEADER } from '@lameduck/core'
export { openTelemetry, OpenTelemetryObserver } from './opentelemetry.ts'
export type { OpenTelemetryOptions } from './opentelemetry.ts'
export { lameduckResourceAttributes, kubernetesAttributes } from './otel-names.ts'
