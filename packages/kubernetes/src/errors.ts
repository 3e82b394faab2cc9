// Typed errors with stable codes for everything that talks to the Kubernetes API.
import { LameduckError } from '@lameduck/core'

/** Codes by HTTP status: the ones a caller acts on differently. */
const STATUS_CODES: Readonly<Record<number, string>> = {
  401: 'LAMEDUCK_ERR_K8S_UNAUTHORIZED',
  403: 'LAMEDUCK_ERR_K8S_FORBIDDEN',
  404: 'LAMEDUCK_ERR_K8S_NOT_FOUND',
  410: 'LAMEDUCK_ERR_K8S_GONE'
}

/** The API server answered with an error status (HTTP, or a watch ERROR event carrying a Status). */
export class KubernetesApiError extends LameduckError {
  /** The HTTP status (401, 403, 404, 410, 500, ...). */
  readonly status: number
  /** The Status object's `reason` (Forbidden, Expired, NotFound, ...), '' when the answer had none. */
  readonly reason: string
  /** What was asked: `list endpointslices in 'shop'`. */
  readonly request: string
  constructor (status: number, reason: string, request: string, message: string) {
    super(STATUS_CODES[status] ?? 'LAMEDUCK_ERR_K8S_API', `kubernetes: ${request}: ${status}${reason === '' ? '' : ` ${reason}`}: ${message}`)
    this.name = 'KubernetesApiError'
    this.status = status
    this.reason = reason
    this.request = request
  }
}

/** The API could not be reached, or a response or watch stream broke, hung or was not what the API sends. */
export class KubernetesStreamError extends LameduckError {
  readonly request: string
  constructor (request: string, message: string, options?: ErrorOptions) {
    super('LAMEDUCK_ERR_K8S_STREAM', `kubernetes: ${request}: ${message}`, options)
    this.name = 'KubernetesStreamError'
    this.request = request
  }
}

/** No usable connection settings: no kubeconfig, no in-cluster service account, or one lameduck cannot use. */
export class KubernetesConfigError extends LameduckError {
  constructor (message: string, options?: ErrorOptions) {
    super('LAMEDUCK_ERR_K8S_CONFIG', `kubernetes: ${message}`, options)
    this.name = 'KubernetesConfigError'
  }
}
