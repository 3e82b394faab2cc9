import { assertDuration, InvalidOptionError, silentLogger, systemClock, type Clock, type Logger } from '@lameduck/core'

/** Options of the local Eureka server. Every duration is in ms so tests can shrink them. */
export interface EurekaServerOptions {
  /** Interface to listen on. Default '127.0.0.1'. */
  host?: string
  /** Port; 0 picks a free one. Default 0 (the CLI defaults to 8761). */
  port?: number
  /** Read-only response cache refresh (eureka.server.response-cache-update-interval-ms). Default 30 000. */
  responseCacheUpdateIntervalMs?: number
  /** Serve GETs from the read-only cache (eureka.server.use-read-only-response-cache). Default true. */
  useReadOnlyCache?: boolean
  /** Read-write cache expiry after write (responseCacheAutoExpirationInSeconds). Default 180 000. */
  responseCacheAutoExpirationMs?: number
  /** How long a change stays in the delta queue. Default 180 000. */
  retentionTimeInMSInDeltaQueue?: number
  /** How often old delta items are pruned. Default 30 000. */
  deltaRetentionTimerIntervalInMs?: number
  /** `GET /apps/delta` answers 403, like eureka.server.disable-delta. Default false. */
  disableDelta?: boolean
  /** Eviction task period. Default 60 000. */
  evictionIntervalTimerInMs?: number
  /** Lease duration for registrants that send no leaseInfo.durationInSecs. Default 90 000. */
  defaultLeaseDurationMs?: number
  /** Reproduce Lease.renew()'s bug: leases expire 2 x duration after the last heartbeat. Default true. */
  leaseExpiryBug?: boolean
  /**
   * Self-preservation (eureka.server.enable-self-preservation), on as in real servers:
   * eviction stops while the renews of the last minute are at or below expected renews
   * per minute x renewalPercentThreshold. false lets eviction always run. Default true.
   */
  selfPreservation?: boolean
  /** Share of the expected renews below which self-preservation stops eviction. Default 0.85. */
  renewalPercentThreshold?: number
  /** The renewal interval the server expects of clients, in seconds. Default 30. */
  expectedClientRenewalIntervalSeconds?: number
  /** Peer servers' base URLs (…/eureka): changes clients make here are replicated to them. Default none. */
  peerUrls?: string[]
  /** PeerEurekaNode's batching delay: a fixed 500 ms on real servers, do not scale it. Default 500. */
  replicationBatchMs?: number
  /** Period of the renews-per-minute measurement. Default 60 000. */
  renewsMeasureIntervalMs?: number
  /** Period of the renewal-threshold update task. Default 900 000. */
  renewalThresholdUpdateIntervalMs?: number
  /** Reject registration bodies a real server cannot deserialize (plain-number port, no dataCenterInfo @class). Default false. */
  strict?: boolean
  logger?: Logger
  clock?: Clock
}

export interface ResolvedEurekaServerOptions {
  host: string
  port: number
  responseCacheUpdateIntervalMs: number
  useReadOnlyCache: boolean
  responseCacheAutoExpirationMs: number
  retentionTimeInMSInDeltaQueue: number
  deltaRetentionTimerIntervalInMs: number
  disableDelta: boolean
  evictionIntervalTimerInMs: number
  defaultLeaseDurationMs: number
  leaseExpiryBug: boolean
  selfPreservation: boolean
  renewalPercentThreshold: number
  expectedClientRenewalIntervalSeconds: number
  peerUrls: string[]
  replicationBatchMs: number
  renewsMeasureIntervalMs: number
  renewalThresholdUpdateIntervalMs: number
  strict: boolean
  logger: Logger
  clock: Clock
}

export const EUREKA_SERVER_DEFAULTS = {
  host: '127.0.0.1',
  port: 0,
  responseCacheUpdateIntervalMs: 30_000,
  useReadOnlyCache: true,
  responseCacheAutoExpirationMs: 180_000,
  retentionTimeInMSInDeltaQueue: 180_000,
  deltaRetentionTimerIntervalInMs: 30_000,
  disableDelta: false,
  evictionIntervalTimerInMs: 60_000,
  defaultLeaseDurationMs: 90_000,
  leaseExpiryBug: true,
  selfPreservation: true,
  renewalPercentThreshold: 0.85,
  expectedClientRenewalIntervalSeconds: 30,
  replicationBatchMs: 500,
  renewsMeasureIntervalMs: 60_000,
  renewalThresholdUpdateIntervalMs: 900_000
} as const

const PERIODS = ['responseCacheUpdateIntervalMs', 'deltaRetentionTimerIntervalInMs', 'evictionIntervalTimerInMs', 'renewsMeasureIntervalMs', 'renewalThresholdUpdateIntervalMs'] as const
const DURATIONS = ['responseCacheAutoExpirationMs', 'retentionTimeInMSInDeltaQueue', 'defaultLeaseDurationMs'] as const
const BOOLEANS = ['useReadOnlyCache', 'disableDelta', 'leaseExpiryBug', 'selfPreservation', 'strict'] as const

export function resolveEurekaServerOptions (options: EurekaServerOptions = {}): ResolvedEurekaServerOptions {
  if (typeof options !== 'object' || options === null) throw new InvalidOptionError('startEureka', 'options must be an object')
  const known = new Set<string>([...Object.keys(EUREKA_SERVER_DEFAULTS), 'strict', 'logger', 'clock', 'peerUrls'])
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw new InvalidOptionError(key, `unknown option; known options are ${[...known].join(', ')}`)
  }
  const o = { ...EUREKA_SERVER_DEFAULTS, strict: false, logger: silentLogger, clock: systemClock, ...stripUndefined(options), peerUrls: peerUrls(options.peerUrls) }
  assertDuration('replicationBatchMs', o.replicationBatchMs)
  if (typeof o.host !== 'string' || o.host === '') throw new InvalidOptionError('host', `must be a non-empty string such as '127.0.0.1', got ${JSON.stringify(o.host)}`)
  if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65_535) throw new InvalidOptionError('port', `must be an integer from 0 to 65535 (0 picks a free port), got ${JSON.stringify(o.port)}`)
  for (const key of PERIODS) {
    assertDuration(key, o[key])
    if (o[key] < 1) throw new InvalidOptionError(key, 'must be at least 1 ms: it is the period of a timer')
  }
  for (const key of DURATIONS) assertDuration(key, o[key])
  for (const key of BOOLEANS) {
    if (typeof o[key] !== 'boolean') throw new InvalidOptionError(key, `must be true or false, got ${JSON.stringify(o[key])}`)
  }
  if (typeof o.renewalPercentThreshold !== 'number' || !(o.renewalPercentThreshold >= 0 && o.renewalPercentThreshold <= 1)) {
    throw new InvalidOptionError('renewalPercentThreshold', `must be a number from 0 to 1 (Eureka's default is 0.85), got ${JSON.stringify(o.renewalPercentThreshold)}`)
  }
  if (typeof o.expectedClientRenewalIntervalSeconds !== 'number' || !(o.expectedClientRenewalIntervalSeconds > 0)) {
    throw new InvalidOptionError('expectedClientRenewalIntervalSeconds', `must be a positive number of seconds, got ${JSON.stringify(o.expectedClientRenewalIntervalSeconds)}`)
  }
  return o
}

function peerUrls (value: unknown): string[] {
  if (value === undefined) return []
  if (!Array.isArray(value)) throw new InvalidOptionError('peerUrls', `must be an array of peer base URLs like 'http://127.0.0.1:8762/eureka', got ${JSON.stringify(value)}`)
  return value.map((v) => {
    let url: URL
    try { url = new URL(String(v)) } catch { throw new InvalidOptionError('peerUrls', `must be http:// URLs like 'http://127.0.0.1:8762/eureka', got ${JSON.stringify(v)}`) }
    if (url.protocol !== 'http:') throw new InvalidOptionError('peerUrls', `must be http:// URLs, got '${url.href}'`)
    return url.href.replace(/\/+$/, '')
  })
}

function stripUndefined<T extends object> (o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>
}
