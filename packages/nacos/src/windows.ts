import { assertDuration, InvalidOptionError, type WindowParts } from '@lameduck/core'

export interface NacosWindowOptions {
  /** Server delay from a change to its UDP push (2.x/3.x: 500, 1.x: 1000). Default 500. */
  pushDelayMs?: number
  /** The server's cacheMillis: how often v1 clients poll. The worst case when a push is lost. Default 10000. */
  cacheMillis?: number
  /** Set false when pushes are known not to arrive (push off, clientIP unreachable): the push delay then adds nothing. Default true. */
  push?: boolean
  /** Extra: request latency, the SDK's 1 s first poll after a subscribe. Default 1000. */
  marginMs?: number
  /** Consumer balancer refresh on top of the Nacos client (e.g. Ribbon 30000 for Spring consumers). Default 0. */
  balancerRefreshMs?: number
  /** Kubernetes endpoint propagation, when traffic also comes through a Service. Default 0. */
  endpointLagMs?: number
}

/**
 * Propagation-window parts for Nacos consumers: push delay + poll period
 * (cacheMillis) + margin. The defaults equal core's `nacos` preset
 * (500 + 10000 + 1000 ms); pass what your servers and consumers use.
 */
export function nacosWindows (options: NacosWindowOptions = {}): WindowParts {
  if (typeof options !== 'object' || options === null) throw new InvalidOptionError('nacosWindows', 'options must be an object')
  const read = (key: Exclude<keyof NacosWindowOptions, 'push'>, fallback: number): number => {
    const value = options[key] ?? fallback
    assertDuration(`nacosWindows.${key}`, value)
    return value
  }
  if (options.push !== undefined && typeof options.push !== 'boolean') throw new InvalidOptionError('nacosWindows.push', `must be a boolean, got ${String(options.push)}`)
  const pushDelayMs = read('pushDelayMs', 500)
  return {
    serverCacheMs: options.push === false ? 0 : pushDelayMs,
    clientFetchMs: read('cacheMillis', 10_000),
    balancerRefreshMs: read('balancerRefreshMs', 0),
    endpointLagMs: read('endpointLagMs', 0),
    marginMs: read('marginMs', 1_000)
  }
}
