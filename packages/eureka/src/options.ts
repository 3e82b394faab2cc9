import { checkKeys, duration, flag, InvalidOptionError, record, redactText, resolveWeightRamp, show, redactUrl, silentLogger, systemClock, type BackoffOptions, type Clock, type Logger, type WeightRampOptions, type WindowParts } from '@lameduck/core'
import { clientLogger, NO_YAML_DIR } from './client.ts'
import { eurekaWindows, type EurekaWindowOptions } from './windows.ts'

export type OfflineMode = 'delete' | 'out-of-service'

/** Options passed through to eureka-js-client (see its README); lameduck owns the fields listed in the README. */
export interface EurekaClientOptions {
  eureka?: {
    heartbeatInterval?: number
    registryFetchInterval?: number
    maxRetries?: number
    requestRetryDelay?: number
    filterUpInstances?: boolean
    ssl?: boolean
    [key: string]: unknown
  }
  /** Extra instance fields (homePageUrl, healthCheckUrl, metadata, leaseInfo, ...). Identity fields come from the lameduck Instance. */
  instance?: Record<string, unknown>
  requestMiddleware?: (request: Record<string, unknown>, done: (request: Record<string, unknown>) => void) => void
  /** Directory searched for eureka-client.yml. Default: none is read (see README). */
  cwd?: string
  filename?: string
  [key: string]: unknown
}

export interface EurekaDiscoveryOptions {
  /** Eureka base URL(s): 'http://127.0.0.1:8761/eureka' (Spring) or '.../eureka/v2' (Netflix). Several = failover. */
  url: string | string[]
  client?: EurekaClientOptions
  logger?: Logger
  /** Bound on each HTTP request eureka-js-client makes. Default 5000. */
  requestTimeoutMs?: number
  /** Route to each instance's ipAddr instead of its hostName (Ribbon's default is hostName). Default false. */
  preferIpAddress?: boolean
}

export interface EurekaRegistryOptions extends EurekaDiscoveryOptions {
  /** How offline() takes the instance out: DELETE (default) or the OUT_OF_SERVICE status override. */
  offlineMode?: OfflineMode
  /** Bound on one register()/deregister() call, below the lifecycle's 10 s registry timeout. Default 8000. */
  registerTimeoutMs?: number
  /** Lease sent as leaseInfo.durationInSecs: the server evicts the instance this long (2x on real servers) after the last heartbeat. Default 90. */
  leaseDurationSecs?: number
  /** Backoff for heartbeat and re-registration retries (capped at the heartbeat interval). */
  backoff?: BackoffOptions
  /** Describes the Eureka server and consumers for `registry.windows` (see eurekaWindows). Default: Netflix/Spring defaults with Ribbon consumers. */
  windows?: EurekaWindowOptions
  /** Drives the heartbeat timers; tests pass core's virtualClock(). Default the system clock. */
  clock?: Clock
  /**
   * Warmup for consumers that read only the metadata `weight` (Spring Cloud LoadBalancer's
   * weighted supplier): register with a low `weight` and raise it by `PUT .../metadata` over
   * the app's warmupMs, a step per consumer refresh (or every `stepMs`). Default false.
   */
  weightRamp?: boolean | WeightRampOptions
}

export interface ResolvedCommon {
  /** The Eureka URLs as they may be shown (describe(), /status, logs): userinfo and secret parameters redacted. The client gets the real ones in clientBase. */
  urls: string[]
  logger: Logger
  requestTimeoutMs: number
  preferIpAddress: boolean
  heartbeatIntervalMs: number
  registryFetchIntervalMs: number
  /** Config shared by every eureka-js-client this adapter creates. */
  clientBase: Record<string, unknown>
  userInstance: Record<string, unknown>
}

export interface ResolvedRegistryOptions extends ResolvedCommon {
  offlineMode: OfflineMode
  registerTimeoutMs: number
  leaseDurationSecs: number
  backoff: BackoffOptions
  /** The propagation window parts, from the `windows` option and the configured fetch interval. */
  windows: WindowParts
  clock: Clock
  /** null when off. */
  weightRamp: WeightRampOptions | null
}

// Set by lameduck from `url` and the Instance; passing them in `client` would fight it.
const OWNED_EUREKA_KEYS = ['serviceUrls', 'host', 'port', 'servicePath', 'useDns', 'registerWithEureka', 'fetchRegistry', 'waitForRegistry']
const OWNED_INSTANCE_KEYS = ['app', 'instanceId', 'hostName', 'ipAddr', 'port', 'status']

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function resolveCommon (fn: string, options: EurekaDiscoveryOptions, known: Readonly<Record<string, true>>): ResolvedCommon {
  if (!isObject(options)) throw new InvalidOptionError(fn, `options must be an object like { url: 'http://127.0.0.1:8761/eureka' }, got ${redactText(String(JSON.stringify(options)))}`)
  checkKeys('', options, known, ` (options of ${fn}())`)
  const urls = resolveUrls(options.url)
  const logger = options.logger ?? silentLogger
  const requestTimeoutMs = duration('requestTimeoutMs', options.requestTimeoutMs, 5_000, { positive: true })
  const preferIpAddress = flag('preferIpAddress', options.preferIpAddress, false)

  const client = options.client ?? {}
  if (!isObject(client)) throw new InvalidOptionError('client', 'must be an object of eureka-js-client options, e.g. { eureka: { heartbeatInterval: 30000 } }')
  const eureka = client.eureka ?? {}
  if (!isObject(eureka)) throw new InvalidOptionError('client.eureka', 'must be an object')
  for (const key of OWNED_EUREKA_KEYS) {
    if (key in eureka) throw new InvalidOptionError(`client.eureka.${key}`, 'is set by lameduck: list the Eureka servers in `url` instead (e.g. url: [\'http://eureka-1:8761/eureka\', \'http://eureka-2:8761/eureka\'])')
  }
  if (client.shouldUseDelta !== undefined && client.shouldUseDelta !== false) {
    throw new InvalidOptionError('client.shouldUseDelta', 'delta fetches corrupt eureka-js-client\'s app cache (it splices the wrong index and drops instances) and never emit registryUpdated; remove the option, lameduck always fetches the full registry')
  }
  if ('logger' in client) throw new InvalidOptionError('client.logger', 'pass a pino-compatible logger as the top-level `logger` option; lameduck routes the client\'s messages into it')
  if (client.requestMiddleware !== undefined && typeof client.requestMiddleware !== 'function') {
    throw new InvalidOptionError('client.requestMiddleware', 'must be a function (request, done) => done(request)')
  }
  const userInstance = client.instance ?? {}
  if (!isObject(userInstance)) throw new InvalidOptionError('client.instance', 'must be an object of extra instance fields')
  for (const key of OWNED_INSTANCE_KEYS) {
    if (key in userInstance) throw new InvalidOptionError(`client.instance.${key}`, 'comes from the lameduck instance (service, id, host, port): set it there (plugin options service/host/port), not in client.instance')
  }
  const heartbeatIntervalMs = duration('client.eureka.heartbeatInterval', eureka.heartbeatInterval, 30_000, { positive: true })
  const registryFetchIntervalMs = duration('client.eureka.registryFetchInterval', eureka.registryFetchInterval, 30_000, { positive: true })

  const userMiddleware = client.requestMiddleware
  const clientBase: Record<string, unknown> = {
    ...client,
    cwd: client.cwd ?? NO_YAML_DIR,
    logger: clientLogger(logger),
    shouldUseDelta: false,
    // `request` has no timeout by default (a server that accepts and never answers would hang every
    // call) and follows redirects (CVE-2023-28155); Eureka answers directly, so neither is needed.
    requestMiddleware: (req: Record<string, unknown>, done: (r: Record<string, unknown>) => void) => {
      const withTimeout = { timeout: requestTimeoutMs, followRedirect: false, ...req }
      if (userMiddleware) userMiddleware(withTimeout, done)
      else done(withTimeout)
    },
    eureka: { ...eureka, serviceUrls: { default: urls } }
  }
  delete clientBase.instance
  return { urls: urls.map(redactUrl), logger, requestTimeoutMs, preferIpAddress, heartbeatIntervalMs, registryFetchIntervalMs, clientBase, userInstance }
}

/** Every option, checked against the types by the compiler. */
const DISCOVERY_KEYS = { url: true, client: true, logger: true, requestTimeoutMs: true, preferIpAddress: true } satisfies Record<keyof EurekaDiscoveryOptions, true>
const REGISTRY_KEYS = {
  ...DISCOVERY_KEYS, offlineMode: true, registerTimeoutMs: true, leaseDurationSecs: true, backoff: true, windows: true, clock: true, weightRamp: true
} satisfies Record<keyof EurekaRegistryOptions, true>

export function resolveDiscoveryOptions (options: EurekaDiscoveryOptions): ResolvedCommon {
  return resolveCommon('eurekaDiscovery', options, DISCOVERY_KEYS)
}

export function resolveRegistryOptions (options: EurekaRegistryOptions): ResolvedRegistryOptions {
  const common = resolveCommon('eurekaRegistry', options, REGISTRY_KEYS)
  const offlineMode = options.offlineMode ?? 'delete'
  if (offlineMode !== 'delete' && offlineMode !== 'out-of-service') {
    throw new InvalidOptionError('offlineMode', `must be 'delete' (DELETE the instance) or 'out-of-service' (status override), got ${show(offlineMode)}`)
  }
  const registerTimeoutMs = duration('registerTimeoutMs', options.registerTimeoutMs, 8_000, { positive: true })
  const leaseDurationSecs = options.leaseDurationSecs ?? 90
  if (!Number.isInteger(leaseDurationSecs) || leaseDurationSecs < 1) {
    throw new InvalidOptionError('leaseDurationSecs', `must be a whole number of seconds >= 1 (Eureka's default is 90), got ${JSON.stringify(leaseDurationSecs)}`)
  }
  if (leaseDurationSecs * 1000 <= common.heartbeatIntervalMs) {
    throw new InvalidOptionError('leaseDurationSecs', `${leaseDurationSecs} s would let the lease expire between heartbeats (client.eureka.heartbeatInterval is ${common.heartbeatIntervalMs} ms); use at least 3 heartbeat intervals`)
  }
  const backoff = options.backoff ?? {}
  if (!isObject(backoff)) throw new InvalidOptionError('backoff', 'must be an object like { initialMs: 500, maxMs: 30000 }')
  // Computed once, here, so a typo fails at construction and is named as written (windows.*).
  const windows = eurekaWindows({ registryFetchIntervalMs: common.registryFetchIntervalMs, ...record('windows', options.windows ?? {}, "{ balancer: 'spring' }") }, 'windows')
  return { ...common, offlineMode, registerTimeoutMs, leaseDurationSecs, backoff: { initialMs: 500, ...backoff }, windows, clock: options.clock ?? systemClock, weightRamp: resolveWeightRamp('weightRamp', options.weightRamp) }
}

function resolveUrls (url: unknown): string[] {
  const list = Array.isArray(url) ? url : [url]
  if (list.length === 0 || list.some((u) => typeof u !== 'string' || u === '')) {
    throw new InvalidOptionError('url', `must be the Eureka base URL, e.g. 'http://127.0.0.1:8761/eureka', or a non-empty array of them; got ${redactText(String(JSON.stringify(url)))}`)
  }
  return (list as string[]).map((u) => {
    // Messages show the URL redacted: it may carry credentials (http://user:pass@eureka:8761/eureka).
    const shown = redactUrl(u)
    let parsed: URL
    try { parsed = new URL(u) } catch { throw new InvalidOptionError('url', `'${shown}' is not a URL; use e.g. 'http://127.0.0.1:8761/eureka'`) }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new InvalidOptionError('url', `'${shown}' must use http or https`)
    const base = u.replace(/\/+$/, '')
    if (/\/apps$/i.test(base)) throw new InvalidOptionError('url', `'${shown}' points at the apps resource; give the Eureka base instead, e.g. '${redactUrl(base.replace(/\/apps$/i, ''))}'`)
    return `${base}/apps/`
  })
}
