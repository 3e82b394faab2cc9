import { InvalidOptionError, duration, flag, record, show, type Logger } from '@lameduck/core'
import { resolveOptions, type LameduckOptions, type ResolvedOptions } from '@lameduck/node/engine'

/** What attachGrpc() takes: the options of attach() (without the HTTP probe routes), plus the gRPC ones. */
export interface GrpcAttachOptions extends Omit<LameduckOptions, 'routes'> {
  /** pino-compatible logger. Default: JSON lines on stderr, info and up. */
  logger?: Logger
  /** Ends the process after the signal path: 0 after a clean close, 1 when forced. Default: exit with that code. */
  terminate?: (code: 0 | 1) => void
  /**
   * The port to wait for and advertise, as given to bindAsync() (e.g. '0.0.0.0:50051'). Default: every
   * bindAsync() the server was given must be done, and the first bound port is advertised (or `port`).
   */
  bindAddress?: string
  /** Startup fails (NotBoundError in the log and /status) when the server is not bound by then. Default 60 000. */
  bindTimeoutMs?: number
  /** Serve grpc.health.v1.Health (Check and Watch) on the lifecycle. Default true; false when the app has its own. */
  health?: boolean
}

export interface ResolvedGrpcOptions {
  engine: ResolvedOptions
  bindAddress: string | undefined
  bindTimeoutMs: number
  health: boolean
}

/** attach()'s options that mean HTTP on the app's port: a gRPC server has none. */
const HTTP_ONLY: Record<string, string> = {
  routes: 'a gRPC server answers probes through grpc.health.v1 (Kubernetes: grpc probes), not HTTP routes; remove it',
  serveRoutes: 'there are no HTTP probe routes on a gRPC server; remove it',
  closeApp: 'attachGrpc() closes the server itself (tryShutdown, then forceShutdown at the bound); remove it'
}

/** Validates once, at attachGrpc(): the gRPC options here, the rest by @lameduck/node's resolveOptions(). */
export function resolveGrpcOptions (input: GrpcAttachOptions): ResolvedGrpcOptions {
  const o = record('options', input, "{ service: 'orders', registry }") as GrpcAttachOptions & Record<string, unknown>
  for (const [name, why] of Object.entries(HTTP_ONLY)) if (o[name] !== undefined) throw new InvalidOptionError(name, why)
  const metrics = o.metrics
  if (typeof metrics === 'object' && metrics !== null && metrics.listener === 'app') {
    throw new InvalidOptionError('metrics.listener', "'app' serves /metrics over HTTP on the app's port, which a gRPC server cannot: use 'admin' (the admin listener, the default) or false")
  }
  const { bindAddress, bindTimeoutMs, health, ...rest } = o
  if (bindAddress !== undefined && (typeof bindAddress !== 'string' || bindAddress.trim() === '')) {
    throw new InvalidOptionError('bindAddress', `must be the address given to bindAsync(), e.g. '0.0.0.0:50051' (got ${show(bindAddress)})`)
  }
  return {
    engine: resolveOptions({ ...rest, routes: false, serveRoutes: false }, rest.registry?.windows),
    bindAddress,
    bindTimeoutMs: duration('bindTimeoutMs', bindTimeoutMs, 60_000, { positive: true }),
    health: flag('health', health, true)
  }
}
