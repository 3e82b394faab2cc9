import type { Server } from '@grpc/grpc-js'
import { InvalidOptionError } from '@lameduck/core'
import { Engine, type LameduckHandle } from '@lameduck/node/engine'
import { HEALTH_SERVICE } from './health-codec.ts'
import { resolveGrpcOptions, type GrpcAttachOptions } from './options.ts'
import { internals } from './server-internals.ts'
import { GrpcTransport, isAttached } from './transport.ts'

/**
 * Attaches the lameduck lifecycle to a @grpc/grpc-js Server, on the same engine
 * as attach(): registration once the server is bound and readiness passes,
 * grpc.health.v1 on the lifecycle, calls in flight counted and marked, GOAWAY
 * when the window is over, a bounded close that names what it cut, and the
 * admin listener, metrics, signal path, sidecar and termination message of attach().
 * Call it before or after bindAsync(); it returns the same handle as attach().
 */
export async function attachGrpc (server: Server, input: GrpcAttachOptions): Promise<LameduckHandle> {
  const options = resolveGrpcOptions(input)
  const grpc = internals(server)
  if (isAttached(server)) {
    throw new InvalidOptionError('server', 'lameduck is already attached to this gRPC server; attach once (close() the first handle to attach again)')
  }
  if (options.health && grpc.handlers.has(`/${HEALTH_SERVICE}/Check`)) {
    throw new InvalidOptionError('health', `the server already has a ${HEALTH_SERVICE} service; pass health: false to keep yours (and set it from the handle's 'state' events), or remove it so lameduck serves it on the lifecycle`)
  }
  const engine = new Engine(options.engine, (host) => new GrpcTransport(server, host, options))
  return await engine.start()
}
