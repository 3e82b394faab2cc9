// The Eureka propagation window from the intervals actually configured, as core
// window parts for the plugin's `windows` option.
import { assertDuration, InvalidOptionError, WINDOW_PARTS, type WindowParts } from '@lameduck/core'

export type EurekaBalancer = 'ribbon' | 'spring' | 'none'

/** Ribbon's ServerListRefreshInterval and Spring Cloud LoadBalancer's cache TTL. */
export const BALANCER_REFRESH_MS: Record<EurekaBalancer, number> = { ribbon: 30_000, spring: 35_000, none: 0 }

export interface EurekaWindowOptions extends Partial<WindowParts> {
  /** Server: eureka.server.response-cache-update-interval-ms. Default 30 000. */
  responseCacheUpdateIntervalMs?: number
  /** Server: eureka.server.use-read-only-response-cache. false drops the server-cache term. Default true. */
  useReadOnlyCache?: boolean
  /** Consumers: registry fetch interval (eureka.client.registry-fetch-interval-seconds x 1000, or eureka-js-client registryFetchInterval). Default 30 000. */
  registryFetchIntervalMs?: number
  /** Consumers' balancer: Ribbon (30 s refresh), Spring Cloud LoadBalancer (35 s cache) or none (eureka-js-client reads its cache directly), or its refresh in ms. Default 'ribbon'. */
  balancer?: EurekaBalancer | number
  /**
   * Eureka servers that replicate to each other, with consumers fetching from any of
   * them: true or the server count. Adds the replication term. Default false (one server).
   */
  peers?: boolean | number
  /** PeerEurekaNode's batching delay: a fixed 500 ms before a change reaches the other peers. Default 500. */
  replicationBatchMs?: number
}

const OWN_KEYS = ['responseCacheUpdateIntervalMs', 'useReadOnlyCache', 'registryFetchIntervalMs', 'balancer', 'peers', 'replicationBatchMs']

/**
 * Worst-case time from a DELETE (or OUT_OF_SERVICE) until a consumer stops
 * routing: read-only cache refresh (+ the replication batch when consumers fetch from
 * another peer) + consumer fetch + balancer refresh. With no
 * arguments it equals the 'eureka-ribbon' preset; `balancer: 'spring'` gives
 * 'eureka-spring' and `balancer: 'none'` gives 'eureka-node'. Any core part
 * (serverCacheMs, clientFetchMs, balancerRefreshMs, endpointLagMs, marginMs)
 * given directly overrides the computed one.
 */
export function eurekaWindows (options: EurekaWindowOptions = {}): WindowParts {
  if (typeof options !== 'object' || options === null) throw new InvalidOptionError('eurekaWindows', 'options must be an object')
  for (const key of Object.keys(options)) {
    if (!OWN_KEYS.includes(key) && !(WINDOW_PARTS as readonly string[]).includes(key)) {
      throw new InvalidOptionError(`eurekaWindows.${key}`, `unknown option; known options are ${[...OWN_KEYS, ...WINDOW_PARTS].join(', ')}`)
    }
  }
  const cache = options.responseCacheUpdateIntervalMs ?? 30_000
  assertDuration('eurekaWindows.responseCacheUpdateIntervalMs', cache)
  const readOnly = options.useReadOnlyCache ?? true
  if (typeof readOnly !== 'boolean') throw new InvalidOptionError('eurekaWindows.useReadOnlyCache', 'must be true or false')
  const fetch = options.registryFetchIntervalMs ?? 30_000
  assertDuration('eurekaWindows.registryFetchIntervalMs', fetch)
  const balancer = options.balancer ?? 'ribbon'
  let balancerMs: number
  if (typeof balancer === 'number') {
    assertDuration('eurekaWindows.balancer', balancer)
    balancerMs = balancer
  } else if (typeof balancer === 'string' && Object.hasOwn(BALANCER_REFRESH_MS, balancer)) {
    balancerMs = BALANCER_REFRESH_MS[balancer]
  } else {
    throw new InvalidOptionError('eurekaWindows.balancer', `must be 'ribbon', 'spring', 'none' or a refresh interval in ms, got ${JSON.stringify(balancer)}`)
  }
  const peers = options.peers ?? false
  if (typeof peers !== 'boolean' && !(Number.isInteger(peers) && peers >= 1)) {
    throw new InvalidOptionError('eurekaWindows.peers', `must be true, false or the server count (an integer >= 1), got ${JSON.stringify(peers)}`)
  }
  const batch = options.replicationBatchMs ?? 500
  assertDuration('eurekaWindows.replicationBatchMs', batch)
  const replicated = peers === true || (typeof peers === 'number' && peers > 1)
  const parts: WindowParts = {
    serverCacheMs: readOnly ? cache : 0,
    // The peer applies the change when the batch arrives; its own caches come after.
    replicationMs: replicated ? batch : 0,
    clientFetchMs: fetch,
    balancerRefreshMs: balancerMs,
    endpointLagMs: 0,
    marginMs: 0
  }
  for (const part of WINDOW_PARTS) {
    const v = options[part]
    if (v === undefined) continue
    assertDuration(`eurekaWindows.${part}`, v)
    parts[part] = v
  }
  return parts
}
