import { status as Status, type sendUnaryData, type ServerUnaryCall, type ServerWritableStream, type UntypedServiceImplementation } from '@grpc/grpc-js'
import { HEALTH_SERVICE, ServingStatus, type HealthCheckRequest, type HealthCheckResponse, type ServingStatusValue } from './health-codec.ts'

/** What the health service reads: whether the server serves now, and which services it has. */
export interface HealthSource {
  /** True while the lifecycle says ready (serving, or draining under readinessWhileDraining 'serve'). */
  serving(): boolean
  /** Whether `name` is a service of this server ('' is the whole server). */
  knows(name: string): boolean
}

/** Longest service name a NOT_FOUND message repeats: the name is the caller's text. */
const MAX_NAME_SHOWN = 100

/**
 * grpc.health.v1.Health on the lifecycle: SERVING only while the engine's
 * readiness answer is ready, NOT_SERVING before registration and from the start
 * of the drain. One status for the whole server ('') and each of its services
 * (the lifecycle is the process's). Watch streams get the status at once and
 * each change; close() ends them, since a stream held open would keep the
 * server's shutdown waiting.
 */
export class HealthService {
  readonly #source: HealthSource
  readonly #watches = new Set<{ call: ServerWritableStream<HealthCheckRequest, HealthCheckResponse>, last: ServingStatusValue }>()

  constructor (source: HealthSource) { this.#source = source }

  /** The implementation for `server.addService(healthServiceDefinition, ...)`. */
  implementation (): UntypedServiceImplementation {
    return {
      Check: (call: ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>, callback: sendUnaryData<HealthCheckResponse>) => { this.#check(call, callback) },
      Watch: (call: ServerWritableStream<HealthCheckRequest, HealthCheckResponse>) => { this.#watch(call) }
    }
  }

  /** Open Watch streams. */
  get watching (): number { return this.#watches.size }

  #status (service: string): ServingStatusValue {
    if (!this.#source.knows(service)) return ServingStatus.SERVICE_UNKNOWN
    return this.#source.serving() ? ServingStatus.SERVING : ServingStatus.NOT_SERVING
  }

  #check (call: ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>, callback: sendUnaryData<HealthCheckResponse>): void {
    const service = call.request.service
    const status = this.#status(service)
    if (status === ServingStatus.SERVICE_UNKNOWN) {
      const shown = service.length > MAX_NAME_SHOWN ? `${service.slice(0, MAX_NAME_SHOWN)}...` : service
      callback({ code: Status.NOT_FOUND, details: `unknown service ${JSON.stringify(shown)}` })
      return
    }
    callback(null, { status })
  }

  #watch (call: ServerWritableStream<HealthCheckRequest, HealthCheckResponse>): void {
    const watch = { call, last: this.#status(call.request.service) }
    this.#watches.add(watch)
    const forget = (): void => { this.#watches.delete(watch) }
    call.once('cancelled', forget)
    call.once('close', forget)
    call.on('error', forget)
    call.write({ status: watch.last })
  }

  /** The lifecycle moved: tell every watcher whose status changed. */
  changed (): void {
    for (const watch of this.#watches) {
      const status = this.#status(watch.call.request.service)
      if (status === watch.last) continue
      watch.last = status
      watch.call.write({ status })
    }
  }

  /** Ends every Watch stream (with OK: the server is going, the client watches elsewhere). */
  close (): void {
    for (const { call, last } of this.#watches) {
      if (call.cancelled) continue
      if (last === ServingStatus.SERVING) call.write({ status: ServingStatus.NOT_SERVING })
      call.end()
    }
    this.#watches.clear()
  }
}

export { HEALTH_SERVICE }
