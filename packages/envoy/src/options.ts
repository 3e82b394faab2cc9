// Option checks shared by the client and the sidecar helper. Each error names the
// option and says what would be accepted. The general checks are core's kit.
import { InvalidOptionError, redactUrl, show } from '@lameduck/core'
import type { ConnectionCountMethod } from './count-connections.ts'

export { count, duration, flag, oneOf } from '@lameduck/core'

export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:15000'
export const CONNECTION_METHODS: readonly ConnectionCountMethod[] = ['istio', 'contour', 'json']

/** Parses an admin base URL: http(s) only, no query, trailing slash dropped. Userinfo is kept (sent as basic auth); messages redact it. */
export function adminUrl (option: string, value: unknown): string {
  if (value === undefined) return DEFAULT_ADMIN_URL
  let url: URL
  try {
    if (typeof value !== 'string' && !(value instanceof URL)) throw new TypeError('not a string')
    url = new URL(String(value))
  } catch {
    throw new InvalidOptionError(option, `must be the Envoy admin URL, e.g. '${DEFAULT_ADMIN_URL}', got ${show(value)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InvalidOptionError(option, `must be an http:// or https:// URL such as '${DEFAULT_ADMIN_URL}', got ${show(value)} (for a unix socket use socketPath)`)
  }
  if (url.search !== '' || url.hash !== '') throw new InvalidOptionError(option, `must not have a query or fragment, got '${redactUrl(url)}'`)
  return url.href.replace(/\/+$/, '')
}

export function regexp (option: string, value: unknown): RegExp | undefined {
  if (value === undefined) return undefined
  if (!(value instanceof RegExp)) throw new InvalidOptionError(option, `must be a RegExp, got ${show(value)}`)
  // A global or sticky RegExp keeps lastIndex between test() calls and would skip matches.
  return value.global || value.sticky ? new RegExp(value.source, value.flags.replace(/[gy]/g, '')) : value
}

export function ports (option: string, value: unknown): number[] | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value) || value.some((p) => !Number.isInteger(p) || p < 0 || p > 65535)) {
    throw new InvalidOptionError(option, `must be an array of port numbers, e.g. [15021, 15090], got ${show(value)}`)
  }
  return [...value]
}

export function strings (option: string, value: unknown): string[] | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value) || value.some((p) => typeof p !== 'string')) {
    throw new InvalidOptionError(option, `must be an array of strings, got ${show(value)}`)
  }
  return [...value]
}
