import { assertDuration, InvalidOptionError, type WindowParts } from '@lameduck/core'

export interface NacosWindowOptions {
  /** Server delay from a change to its push task (2.x/3.x: 500, 1.x: 1000). Default 500. */
  pushDelayMs?: number
  /** The server's task engine check (NacosDelayTaskExecuteEngine): a fixed 100 ms on top of the push delay. Default 100. */
  pushCheckMs?: number
  /** The server's cacheMillis: how often v1 clients poll. The worst case when a push is lost. Default 10000. */
  cacheMillis?: number
  /**
   * Whether pushes arrive. It no longer changes the window: with push off the v1 list
   * is still the snapshot the push task refreshes, so the server term stays. Default true.
   */
  push?: boolean
  /**
   * A Nacos cluster whose nodes the SDK reads at random (`serverList` with several
   * servers): true or the node count. Adds the distro sync delay. Default false.
   */
  cluster?: boolean | number
  /** DistroConstants.DEFAULT_DATA_SYNC_DELAY_MILLISECONDS: a fixed 1000 between nodes. Default 1000. */
  distroSyncDelayMs?: number
  /** Extra: request latency, the SDK's 1 s first poll after a subscribe. Default 1000. */
  marginMs?: number
  /** Consumer balancer refresh on top of the Nacos client (e.g. Ribbon 30000 for Spring consumers). Default 0. */
  balancerRefreshMs?: number
  /** Kubernetes endpoint propagation, when traffic also comes through a Service. Default 0. */
  endpointLagMs?: number
}

type DurationKey = Exclude<keyof NacosWindowOptions, 'push' | 'cluster'>

/**
 * Propagation-window parts for Nacos consumers: the list snapshot (push delay + the
 * 100 ms task check), then the distro sync to the other nodes of a cluster, then the
 * poll period (cacheMillis, the worst case when a push is lost) and a margin. Defaults:
 * 600 + 10000 + 1000 ms on one node; `cluster: true` adds 1000.
 */
export function nacosWindows (options: NacosWindowOptions = {}): WindowParts {
  if (typeof options !== 'object' || options === null) throw new InvalidOptionError('nacosWindows', 'options must be an object')
  const read = (key: DurationKey, fallback: number): number => {
    const value = options[key] ?? fallback
    assertDuration(`nacosWindows.${key}`, value)
    return value
  }
  if (options.push !== undefined && typeof options.push !== 'boolean') throw new InvalidOptionError('nacosWindows.push', `must be a boolean, got ${String(options.push)}`)
  const cluster = options.cluster ?? false
  if (typeof cluster !== 'boolean' && !(Number.isInteger(cluster) && cluster >= 1)) {
    throw new InvalidOptionError('nacosWindows.cluster', `must be true, false or the node count (an integer >= 1), got ${String(cluster)}`)
  }
  const clustered = cluster === true || (typeof cluster === 'number' && cluster > 1)
  return {
    serverCacheMs: read('pushDelayMs', 500) + read('pushCheckMs', 100),
    replicationMs: clustered ? read('distroSyncDelayMs', 1_000) : 0,
    clientFetchMs: read('cacheMillis', 10_000),
    balancerRefreshMs: read('balancerRefreshMs', 0),
    endpointLagMs: read('endpointLagMs', 0),
    marginMs: read('marginMs', 1_000)
  }
}
