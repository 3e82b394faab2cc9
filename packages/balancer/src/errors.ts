import { LameduckError } from '@lameduck/core'

/** Why no instance could take a request. */
export type NoInstanceReason =
  | 'none-registered'
  | 'all-draining'
  | 'all-ejected'
  | 'no-weight'
  | 'unavailable'
  | 'connect-failed'

export interface InstanceCounts {
  /** Instances discovery lists as UP. */
  registered: number
  draining: number
  ejected: number
  /** Configured weight 0: listed but never picked. */
  zeroWeight: number
}

/** No instance of a service can take the request; `reason` says why. */
export class NoInstanceError extends LameduckError {
  readonly service: string
  readonly reason: NoInstanceReason
  readonly counts: InstanceCounts

  constructor (service: string, reason: NoInstanceReason, counts: InstanceCounts, detail: string, options?: ErrorOptions) {
    super('LAMEDUCK_ERR_NO_INSTANCE', `no instance of '${service}' available: ${detail}`, options)
    this.name = 'NoInstanceError'
    this.service = service
    this.reason = reason
    this.counts = counts
  }
}

/** The request's host is not one of the balancer's services and `unknownHosts` is 'error'. */
export class UnknownServiceError extends LameduckError {
  readonly host: string
  constructor (host: string, known: readonly string[]) {
    super('LAMEDUCK_ERR_UNKNOWN_SERVICE', `'${host}' is not a service of this balancer (known: ${known.join(', ') || 'none'}); add it to 'services' or set unknownHosts: 'agent'`)
    this.name = 'UnknownServiceError'
    this.host = host
  }
}
