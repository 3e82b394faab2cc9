import { checkKeys, count, duration, flag, InvalidOptionError, number, record, show, silentLogger, systemClock, url, withMethods, type Clock, type Logger } from '@lameduck/core'

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

/** Every option, checked against the type by the compiler. */
const KNOWN = {
  ...Object.fromEntries(Object.keys(EUREKA_SERVER_DEFAULTS).map((k) => [k, true])) as Record<keyof typeof EUREKA_SERVER_DEFAULTS, true>,
  strict: true,
  peerUrls: true,
  logger: true,
  clock: true
} satisfies Record<keyof EurekaServerOptions, true>

const PERIODS = ['responseCacheUpdateIntervalMs', 'deltaRetentionTimerIntervalInMs', 'evictionIntervalTimerInMs', 'renewsMeasureIntervalMs', 'renewalThresholdUpdateIntervalMs'] as const
const DURATIONS = ['responseCacheAutoExpirationMs', 'retentionTimeInMSInDeltaQueue', 'defaultLeaseDurationMs', 'replicationBatchMs'] as const
const BOOLEANS = ['useReadOnlyCache', 'disableDelta', 'leaseExpiryBug', 'selfPreservation'] as const

export function resolveEurekaServerOptions (options: EurekaServerOptions = {}): ResolvedEurekaServerOptions {
  record('startEureka', options, '{ port: 8761 }')
  checkKeys('', options, KNOWN)
  const d = EUREKA_SERVER_DEFAULTS
  const each = <K extends string, V>(keys: readonly K[], check: (key: K) => V): Record<K, V> => Object.fromEntries(keys.map((k) => [k, check(k)])) as Record<K, V>
  const host = options.host ?? d.host
  if (typeof host !== 'string' || host === '') throw new InvalidOptionError('host', `must be a non-empty string such as '127.0.0.1', got ${show(host)}`)
  return {
    host,
    port: count('port', options.port, d.port, { max: 65_535 }),
    // Periods of timers: 0 would spin.
    ...each(PERIODS, (k) => duration(k, options[k], d[k], { positive: true })),
    ...each(DURATIONS, (k) => duration(k, options[k], d[k])),
    ...each(BOOLEANS, (k) => flag(k, options[k], d[k])),
    strict: flag('strict', options.strict, false),
    renewalPercentThreshold: number('renewalPercentThreshold', options.renewalPercentThreshold, d.renewalPercentThreshold, { max: 1, hint: " (Eureka's default is 0.85)" }),
    expectedClientRenewalIntervalSeconds: number('expectedClientRenewalIntervalSeconds', options.expectedClientRenewalIntervalSeconds, d.expectedClientRenewalIntervalSeconds, { above: true, hint: ' (seconds)' }),
    peerUrls: peerUrls(options.peerUrls),
    logger: withMethods<Logger>('logger', options.logger ?? silentLogger, ['info', 'warn'], 'a pino-compatible logger'),
    clock: withMethods<Clock>('clock', options.clock ?? systemClock, ['now', 'setTimeout', 'clearTimeout'], 'a Clock (systemClock or virtualClock())')
  }
}

function peerUrls (value: unknown): string[] {
  if (value === undefined) return []
  if (!Array.isArray(value)) throw new InvalidOptionError('peerUrls', `must be an array of peer base URLs like 'http://127.0.0.1:8762/eureka', got ${show(value)}`)
  return value.map((v, i) => url(`peerUrls[${i}]`, v, 'http://127.0.0.1:8762/eureka').href.replace(/\/+$/, ''))
}
