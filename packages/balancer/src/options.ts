import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { assertDuration, checkKeys, InvalidOptionError, serviceKey, silentLogger, systemClock } from '@lameduck/core'
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

function count (option: string, value: unknown, min: number): number {
  if (!Number.isInteger(value) || (value as number) < min) throw new InvalidOptionError(option, `must be an integer ≥ ${min}, got ${String(value)}`)
  return value as number
}

function isObject (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function defaultConsumerId (): string {
  return `${hostname()}-${randomBytes(4).toString('hex')}`
}

/** Validates once, at createBalancer: each error names the option and the fix. */
export function resolveOptions (options: BalancerOptions): ResolvedOptions {
  if (!isObject(options)) throw new InvalidOptionError('createBalancer', 'options must be an object like { service, discovery }')
  checkKeys('', options, KNOWN)

  const names = [...(options.service !== undefined ? [options.service] : []), ...(options.services ?? [])]
  if (options.services !== undefined && !Array.isArray(options.services)) throw new InvalidOptionError('services', 'must be an array of service names')
  if (names.length === 0) throw new InvalidOptionError('service', "give the service to route, e.g. service: 'orders' (or services: [...])")
  const seen = new Set<string>()
  for (const name of names) {
    if (typeof name !== 'string' || !/^[a-z0-9][a-z0-9._-]*$/i.test(name)) {
      throw new InvalidOptionError('services', `'${String(name)}' is not usable as a URL host; use letters, digits, '.', '_' or '-'`)
    }
    if (seen.has(serviceKey(name))) throw new InvalidOptionError('services', `'${name}' is listed twice (names compare case-insensitively)`)
    seen.add(serviceKey(name))
  }

  const discovery = options.discovery
  if (!isObject(discovery) || typeof discovery.instances !== 'function' || typeof discovery.subscribe !== 'function') {
    throw new InvalidOptionError('discovery', 'must be a Discovery { instances(service), subscribe(service, cb) }: eurekaRegistry(), nacosRegistry(), memoryRegistry() or staticDiscovery([...])')
  }

  const refreshIntervalMs = options.refreshIntervalMs ?? 30_000
  assertDuration('refreshIntervalMs', refreshIntervalMs)

  const curve = options.curve ?? 'linear'
  if (curve !== 'linear' && curve !== 'slow-start') throw new InvalidOptionError('curve', `must be 'linear' or 'slow-start', got ${String(curve)}`)

  const ss = options.slowStart ?? {}
  if (!isObject(ss)) throw new InvalidOptionError('slowStart', 'must be an object like { aggression: 1, minWeightPercent: 10 }')
  if (ss.windowMs !== undefined) assertDuration('slowStart.windowMs', ss.windowMs)
  const aggression = ss.aggression ?? 1
  if (typeof aggression !== 'number' || !(aggression > 0) || !Number.isFinite(aggression)) {
    throw new InvalidOptionError('slowStart.aggression', `must be a number > 0 (1 = linear), got ${String(aggression)}`)
  }
  const minWeightPercent = ss.minWeightPercent ?? 10
  if (typeof minWeightPercent !== 'number' || !(minWeightPercent >= 0 && minWeightPercent <= 100)) {
    throw new InvalidOptionError('slowStart.minWeightPercent', `must be a percentage 0..100, got ${String(minWeightPercent)}`)
  }

  const consumerId = options.consumerId ?? defaultConsumerId()
  if (typeof consumerId !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(consumerId)) {
    throw new InvalidOptionError('consumerId', 'must be 1–200 visible ASCII characters (it is sent as a header value)')
  }

  const maxConnectRetries = count('maxConnectRetries', options.maxConnectRetries ?? 3, 0)
  const ri = options.retryIdempotent ?? false
  const retryIdempotent = ri === true ? 1 : ri === false ? 0 : count('retryIdempotent', ri, 0)
  const ejectAfter = count('ejectAfter', options.ejectAfter ?? 1, 1)

  const ejectMs = options.ejectMs ?? 1_000
  assertDuration('ejectMs', ejectMs)
  if (options.ejectBackoff !== undefined && !isObject(options.ejectBackoff)) {
    throw new InvalidOptionError('ejectBackoff', 'must be an object like { initialMs, maxMs, factor, jitter }')
  }
  const ejectBackoff: BackoffOptions = { initialMs: ejectMs, maxMs: Math.max(30_000, ejectMs), factor: 2, jitter: 0.2, ...options.ejectBackoff }
  assertDuration('ejectBackoff.initialMs', ejectBackoff.initialMs)
  assertDuration('ejectBackoff.maxMs', ejectBackoff.maxMs)

  const connectTimeoutMs = options.connectTimeoutMs ?? 3_000
  assertDuration('connectTimeoutMs', connectTimeoutMs)
  const warmupTickMs = options.warmupTickMs
  if (warmupTickMs !== undefined) {
    assertDuration('warmupTickMs', warmupTickMs)
    if (warmupTickMs < 1) throw new InvalidOptionError('warmupTickMs', 'must be at least 1 ms')
  }

  const drainingFallback = options.drainingFallback ?? true
  if (typeof drainingFallback !== 'boolean') throw new InvalidOptionError('drainingFallback', 'must be true or false')
  const emptyListProtection = options.emptyListProtection ?? true
  if (typeof emptyListProtection !== 'boolean') throw new InvalidOptionError('emptyListProtection', 'must be true or false')

  const unknownHosts = options.unknownHosts ?? 'agent'
  if (unknownHosts !== 'agent' && unknownHosts !== 'error' && !(isObject(unknownHosts) && typeof unknownHosts.dispatch === 'function')) {
    throw new InvalidOptionError('unknownHosts', "must be 'agent', 'error' or an undici Dispatcher")
  }

  const clock = options.clock ?? systemClock
  if (!isObject(clock) || typeof clock.now !== 'function' || typeof clock.setTimeout !== 'function') {
    throw new InvalidOptionError('clock', 'must be a Clock { now, setTimeout, clearTimeout } (systemClock or virtualClock())')
  }
  const logger = options.logger ?? silentLogger
  if (!isObject(logger) || typeof logger.warn !== 'function') throw new InvalidOptionError('logger', 'must be a pino-compatible logger')

  const given: Pool.Options = options.poolOptions ?? {}
  if (!isObject(options.poolOptions ?? {})) throw new InvalidOptionError('poolOptions', 'must be an object of undici Pool options')
  const connect = given.connect === undefined
    ? { timeout: connectTimeoutMs }
    : typeof given.connect === 'function' ? given.connect : { timeout: connectTimeoutMs, ...given.connect }
  const poolOptions: Pool.Options = { ...given, connect }
  const factory = options.factory ?? defaultFactory
  if (typeof factory !== 'function') throw new InvalidOptionError('factory', 'must be a function (origin, opts) => Dispatcher, e.g. (origin, opts) => new Pool(origin, opts)')

  return {
    services: names,
    discovery,
    refreshIntervalMs,
    curve,
    slowStart: { windowMs: ss.windowMs, aggression, minWeightPercent },
    consumerId,
    maxConnectRetries,
    retryIdempotent,
    ejectAfter,
    ejectBackoff,
    warmupTickMs,
    drainingFallback,
    emptyListProtection,
    unknownHosts,
    clock,
    logger,
    poolOptions,
    factory
  }
}
