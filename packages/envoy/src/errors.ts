import { LameduckError } from '@lameduck/core'

/** Stable codes of {@link EnvoyAdminError}. */
export const ENVOY_ERROR_CODES = {
  /** Nothing answered: connection refused, reset, DNS failure. Envoy is down or the URL is wrong. */
  UNREACHABLE: 'LAMEDUCK_ERR_ENVOY_UNREACHABLE',
  /** The admin API did not answer within `timeoutMs`. */
  TIMEOUT: 'LAMEDUCK_ERR_ENVOY_TIMEOUT',
  /** 405: a mutating endpoint was called without POST. */
  METHOD: 'LAMEDUCK_ERR_ENVOY_METHOD',
  /** Any other 4xx/5xx (404 wrong path, 400 bad parameter, 503 ...). */
  STATUS: 'LAMEDUCK_ERR_ENVOY_STATUS',
  /** 2xx, but a body the client cannot use (not JSON, unknown state, too large). */
  RESPONSE: 'LAMEDUCK_ERR_ENVOY_RESPONSE',
  /** The stats answered, but without the active-connection stat (stats matcher, wrong method). */
  STATS_UNAVAILABLE: 'LAMEDUCK_ERR_ENVOY_STATS_UNAVAILABLE'
} as const

export type EnvoyErrorCode = typeof ENVOY_ERROR_CODES[keyof typeof ENVOY_ERROR_CODES]

export interface EnvoyAdminErrorDetails {
  /** Full URL of the admin request. */
  url: string
  method: string
  statusCode?: number
  /** First 512 characters of the response body, when there was one. */
  body?: string
}

/** An Envoy admin request failed. `code` says how; `url` says where. */
export class EnvoyAdminError extends LameduckError {
  declare readonly code: EnvoyErrorCode
  readonly url: string
  readonly method: string
  readonly statusCode: number | undefined
  readonly body: string | undefined

  constructor (code: EnvoyErrorCode, message: string, details: EnvoyAdminErrorDetails, options?: ErrorOptions) {
    super(code, `${message} (${details.method} ${details.url})`, options)
    this.name = 'EnvoyAdminError'
    this.url = details.url
    this.method = details.method
    this.statusCode = details.statusCode
    this.body = details.body
  }
}
