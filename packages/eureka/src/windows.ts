// The Eureka propagation window from the intervals actually configured, as core
// window parts for the plugin's `windows` option.
import { checkKeys, duration, flag, InvalidOptionError, record, show, WINDOW_PARTS, type WindowParts } from '@lameduck/core'

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
  /**
   * After the batch, the replication request itself: two tries of Spring Cloud's peer connect
   * and read timeouts (eureka.server.peer-node-connect-timeout-ms and -read-timeout-ms, 200 + 200)
   * with PeerEurekaNode's 100 ms retry sleep between them. Measured on two real peers: 505-1419 ms
   * from the cancel to the peer on a loaded machine, never the batch alone. Default 900.
   */
  replicationRequestMs?: number
}

/** Every option, checked against the type by the compiler. */
const KNOWN = {
  responseCacheUpdateIntervalMs: true,
  useReadOnlyCache: true,
  registryFetchIntervalMs: true,
  balancer: true,
  peers: true,
  replicationBatchMs: true,
  replicationRequestMs: true,
  ...Object.fromEntries(WINDOW_PARTS.map((p) => [p, true])) as Record<keyof WindowParts, true>
} satisfies Record<keyof EurekaWindowOptions, true>

/**
 * Worst-case time from a DELETE (or OUT_OF_SERVICE) until a consumer stops
 * routing: read-only cache refresh (+ the replication batch when consumers fetch from
 * another peer) + consumer fetch + balancer refresh. With no
 * arguments it equals the 'eureka-ribbon' preset; `balancer: 'spring'` gives
 * 'eureka-spring' and `balancer: 'none'` gives 'eureka-node'. Any core part
 * (serverCacheMs, clientFetchMs, balancerRefreshMs, endpointLagMs, marginMs)
 * given directly overrides the computed one.
 */
export function eurekaWindows (options: EurekaWindowOptions = {}, at = 'eurekaWindows'): WindowParts {
  record(at, options, '{ responseCacheUpdateIntervalMs: 30000, balancer: \'ribbon\' }')
  checkKeys(at, options, KNOWN)
  const readOnly = flag(`${at}.useReadOnlyCache`, options.useReadOnlyCache, true)
  const cache = duration(`${at}.responseCacheUpdateIntervalMs`, options.responseCacheUpdateIntervalMs, 30_000)
  const fetch = duration(`${at}.registryFetchIntervalMs`, options.registryFetchIntervalMs, 30_000)
  const balancer = options.balancer ?? 'ribbon'
  if (typeof balancer !== 'number' && !(typeof balancer === 'string' && Object.hasOwn(BALANCER_REFRESH_MS, balancer))) {
    throw new InvalidOptionError(`${at}.balancer`, `must be 'ribbon', 'spring', 'none' or a refresh interval in ms, got ${show(balancer)}`)
  }
  const balancerMs = typeof balancer === 'number' ? duration(`${at}.balancer`, balancer, 0) : BALANCER_REFRESH_MS[balancer]
  const peers = options.peers ?? false
  if (typeof peers !== 'boolean' && !(Number.isInteger(peers) && peers >= 1)) {
    throw new InvalidOptionError(`${at}.peers`, `must be true, false or the server count (an integer >= 1), got ${show(peers)}`)
  }
  const replicated = peers === true || (typeof peers === 'number' && peers > 1)
  const batch = duration(`${at}.replicationBatchMs`, options.replicationBatchMs, 500)
  const replicationRequest = duration(`${at}.replicationRequestMs`, options.replicationRequestMs, 2 * (200 + 200) + 100)
  const parts: WindowParts = {
    serverCacheMs: readOnly ? cache : 0,
    // The peer applies the change when the batch's request lands; its own caches come after.
    replicationMs: replicated ? batch + replicationRequest : 0,
    clientFetchMs: fetch,
    balancerRefreshMs: balancerMs,
    endpointLagMs: 0,
    marginMs: 0
  }
  for (const part of WINDOW_PARTS) parts[part] = duration(`${at}.${part}`, options[part], parts[part])
  return parts
}
