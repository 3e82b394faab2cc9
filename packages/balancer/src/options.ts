import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { backoff, checkKeys, count, duration, flag, fn, InvalidOptionError, number, oneOf, record, serviceKey, show, silentLogger, systemClock, withMethods } from '@lameduck/core'
import type { BackoffOptions, Clock, Discovery, Logger, WarmupCurve } from '@lameduck/core'
import { Pool } from 'undici'
import type { Dispatcher } from 'undici'

export interface SlowStartConfig {
  /** Ramp length. Default: the instance's published `lameduck.warmup`. */
  windowMs?: number
  /** Curve shape (Envoy): > 1 ramps faster early, < 1 slower. Default 1. */
  aggression?: number
  /** Floor as a percentage of the weight. Default 10. */
  minWeightPercent?: number
}

export interface BalancerOptions {
  /** The service this balancer routes (`http://<service>/...`). Give `service` or `services`. */
  service?: string
  /** Several services; hosts match case-insensitively. */
  services?: readonly string[]
  /** Where instances come from: eurekaRegistry, nacosRegistry, memoryRegistry or staticDiscovery. */
  discovery: Discovery
  /** Re-read discovery this often (the consumer's "Ribbon" hop); 0 = only on change events. Default 30 000. */
  refreshIntervalMs?: number
  /** Warmup curve: 'linear' (Dubbo) or 'slow-start' (Envoy). Default 'linear'. */
  curve?: WarmupCurve
  slowStart?: SlowStartConfig
  /** Sent as `x-lameduck-consumer`. Default: `<hostname>-<random>`, fixed for this balancer. */
  consumerId?: string
  /** Other instances to try when a connect fails (nothing was sent). Default 3. */
  maxConnectRetries?: number
  /** Retry idempotent requests (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) with a replayable body on another instance after other failures before a response: true = once, a number = that many times. Default false. */
  retryIdempotent?: boolean | number
  /** Consecutive connect failures that eject an instance. Default 1. */
  ejectAfter?: number
  /** First ejection length; each ejection in a row doubles it up to 30 s. Default 1 000. */
  ejectMs?: number
  /** Full control over ejection lengths (core BackoffOptions). Overrides ejectMs. */
  ejectBackoff?: BackoffOptions
  /** Connect timeout per attempt, so a vanished host costs little before the retry. Default 3 000. */
  connectTimeoutMs?: number
  /** How often weights are recomputed while an instance warms. Default: 1/50 of the shortest ramp, 20 ms..1 s. */
  warmupTickMs?: number
  /** When every remaining instance is draining, keep using them (they still serve) instead of failing. Default true. */
  drainingFallback?: boolean
  /**
   * When discovery suddenly lists no instance of a service (a restarted Eureka serves an
   * empty registry until heartbeats arrive), keep routing to the last ones it listed
   * until it lists some again. Default true.
   */
  emptyListProtection?: boolean
  /** Hosts that are not services: 'agent' = a normal undici Agent, 'error' = UnknownServiceError, or your Dispatcher. Default 'agent'. */
  unknownHosts?: 'agent' | 'error' | Dispatcher
  clock?: Clock
  logger?: Logger
  /** Passed to each instance's undici Pool (and to the pass-through Agent). */
  poolOptions?: Pool.Options
  /**
   * Creates the dispatcher for one instance (as undici's BalancedPool `factory`):
   * `origin` is `http://host:port`, `opts` the resolved poolOptions. Default `new Pool(origin, opts)`.
   */
  factory?: PoolFactory
}

/** Builds one instance's dispatcher. */
export type PoolFactory = (origin: string, opts: Pool.Options) => Dispatcher

const defaultFactory: PoolFactory = (origin, opts) => new Pool(origin, opts)

export interface ResolvedOptions {
  services: string[]
  discovery: Discovery
  refreshIntervalMs: number
  curve: WarmupCurve
  slowStart: { windowMs: number | undefined, aggression: number, minWeightPercent: number }
  consumerId: string
  maxConnectRetries: number
  retryIdempotent: number
  ejectAfter: number
  ejectBackoff: BackoffOptions
  /** undefined = derived from the ramp being run. */
  warmupTickMs: number | undefined
  drainingFallback: boolean
  emptyListProtection: boolean
  unknownHosts: 'agent' | 'error' | Dispatcher
  clock: Clock
  logger: Logger
  poolOptions: Pool.Options
  factory: PoolFactory
}

/** Every option, checked against the type by the compiler. */
const KNOWN = {
  service: true,
  services: true,
  discovery: true,
  refreshIntervalMs: true,
  curve: true,
  slowStart: true,
  consumerId: true,
  maxConnectRetries: true,
  retryIdempotent: true,
  ejectAfter: true,
  ejectMs: true,
  ejectBackoff: true,
  connectTimeoutMs: true,
  warmupTickMs: true,
  drainingFallback: true,
  emptyListProtection: true,
  unknownHosts: true,
  clock: true,
  logger: true,
  poolOptions: true,
  factory: true
} satisfies Record<keyof BalancerOptions, true>

export function defaultConsumerId (): string {
  return `${hostname()}-${randomBytes(4).toString('hex')}`
}

/** Validates once, at createBalancer: each error names the option and the fix. */
export function resolveOptions (options: BalancerOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new InvalidOptionError('createBalancer', 'options must be an object like { service, discovery }')
  checkKeys('', options, KNOWN)
  const ri = options.retryIdempotent ?? false
  const connectTimeoutMs = duration('connectTimeoutMs', options.connectTimeoutMs, 3_000)
  return {
    services: serviceNames(options),
    discovery: withMethods('discovery', options.discovery, ['instances', 'subscribe'], 'a Discovery (eurekaRegistry(), nacosRegistry(), memoryRegistry() or staticDiscovery([...]))'),
    refreshIntervalMs: duration('refreshIntervalMs', options.refreshIntervalMs, 30_000),
    curve: oneOf('curve', options.curve, ['linear', 'slow-start'], 'linear'),
    slowStart: slowStart(options.slowStart),
    consumerId: consumerId(options.consumerId),
    maxConnectRetries: count('maxConnectRetries', options.maxConnectRetries, 3),
    retryIdempotent: typeof ri === 'boolean' ? Number(ri) : count('retryIdempotent', ri, 0),
    ejectAfter: count('ejectAfter', options.ejectAfter, 1, { min: 1 }),
    ejectBackoff: ejectBackoff(options),
    warmupTickMs: options.warmupTickMs === undefined ? undefined : duration('warmupTickMs', options.warmupTickMs, 0, { positive: true }),
    drainingFallback: flag('drainingFallback', options.drainingFallback, true),
    emptyListProtection: flag('emptyListProtection', options.emptyListProtection, true),
    unknownHosts: unknownHosts(options.unknownHosts),
    clock: withMethods('clock', options.clock ?? systemClock, ['now', 'setTimeout', 'clearTimeout'], 'a Clock (systemClock or virtualClock())'),
    logger: withMethods('logger', options.logger ?? silentLogger, ['warn'], 'a pino-compatible logger'),
    poolOptions: poolOptions(options.poolOptions, connectTimeoutMs),
    factory: fn<PoolFactory>('factory', options.factory ?? defaultFactory, '(origin, opts) => Dispatcher, e.g. (origin, opts) => new Pool(origin, opts)')
  }
}

function serviceNames (options: BalancerOptions): string[] {
  if (options.services !== undefined && !Array.isArray(options.services)) throw new InvalidOptionError('services', `must be an array of service names, got ${show(options.services)}`)
  const names = [...(options.service !== undefined ? [options.service] : []), ...(options.services ?? [])]
  if (names.length === 0) throw new InvalidOptionError('service', "give the service to route, e.g. service: 'orders' (or services: [...])")
  const seen = new Set<string>()
  for (const name of names) {
    if (typeof name !== 'string' || !/^[a-z0-9][a-z0-9._-]*$/i.test(name)) {
      throw new InvalidOptionError('services', `${show(name)} is not usable as a URL host; use letters, digits, '.', '_' or '-'`)
    }
    if (seen.has(serviceKey(name))) throw new InvalidOptionError('services', `'${name}' is listed twice (names compare case-insensitively)`)
    seen.add(serviceKey(name))
  }
  return names
}

function slowStart (value: SlowStartConfig | undefined): ResolvedOptions['slowStart'] {
  const ss = record('slowStart', value ?? {}, '{ aggression: 1, minWeightPercent: 10 }')
  return {
    windowMs: ss.windowMs === undefined ? undefined : duration('slowStart.windowMs', ss.windowMs, 0),
    aggression: number('slowStart.aggression', ss.aggression, 1, { above: true, hint: ' (1 = linear)' }),
    minWeightPercent: number('slowStart.minWeightPercent', ss.minWeightPercent, 10, { max: 100, hint: ' (a percentage)' })
  }
}

function consumerId (value: unknown): string {
  const id = value ?? defaultConsumerId()
  if (typeof id !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(id)) {
    throw new InvalidOptionError('consumerId', `must be 1\u2013200 visible ASCII characters (it is sent as a header value), got ${show(id)}`)
  }
  return id
}

function ejectBackoff (options: BalancerOptions): BackoffOptions {
  const ejectMs = duration('ejectMs', options.ejectMs, 1_000)
  return backoff('ejectBackoff', options.ejectBackoff, { initialMs: ejectMs, maxMs: Math.max(30_000, ejectMs), factor: 2, jitter: 0.2 })
}

function unknownHosts (value: unknown): ResolvedOptions['unknownHosts'] {
  if (value === undefined || value === 'agent' || value === 'error') return value ?? 'agent'
  if (typeof value === 'object' && value !== null && typeof (value as Dispatcher).dispatch === 'function') return value as Dispatcher
  throw new InvalidOptionError('unknownHosts', `must be 'agent', 'error' or an undici Dispatcher, got ${show(value)}`)
}

function poolOptions (value: unknown, connectTimeoutMs: number): Pool.Options {
  const given: Pool.Options = record('poolOptions', value ?? {}, '{ connections: 16 } (undici Pool options)')
  const connect = given.connect === undefined
    ? { timeout: connectTimeoutMs }
    : typeof given.connect === 'function' ? given.connect : { timeout: connectTimeoutMs, ...given.connect }
  return { ...given, connect }
}
