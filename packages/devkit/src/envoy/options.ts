import { count, duration, flag, InvalidOptionError, oneOf, show, silentLogger, type Logger } from '@lameduck/core'
import type { DrainStrategy, TrafficDirection } from './drain-manager.ts'
import { parseRetryOn, RETRY_ON, type RetryOn } from './retry-policy.ts'

export interface EnvoyOptions {
  /** The app this Envoy fronts, e.g. 'http://127.0.0.1:3000'. Required. */
  upstream: string | URL
  /** Data-plane listener port. Default 0 (any free port). */
  listen?: number
  /** Listener bind address. Default '127.0.0.1'. */
  host?: string
  /** Admin port. Default 0 here; the CLI defaults to 15000. */
  admin?: number
  /** Admin bind address. Default '127.0.0.1'. */
  adminHost?: string
  /** --drain-time-s in ms. Default 45 000 (Istio's drainDuration; Envoy's own default is 600 s). */
  drainTimeMs?: number
  /** --drain-strategy. Default 'immediate' (what Istio runs; Envoy's own default is 'gradual'). */
  drainStrategy?: DrainStrategy
  /** Time in PRE_INITIALIZING (init manager not started) after the listeners are bound. Default 0. */
  preInitializeDelayMs?: number
  /** Then time in INITIALIZING (xDS not yet loaded); connections wait unaccepted. Default 0. */
  initializeDelayMs?: number
  /** Stats flush period: `server.state` and `server.total_connections` lag by up to this. Default 5000. */
  statsFlushIntervalMs?: number
  /** Worker threads: per-worker `listener.<addr>.worker_N.*` stats. Default 2 (Istio's concurrency). */
  concurrency?: number
  /** Listener name in /listeners. Default 'ingress'. */
  listenerName?: string
  /** HCM stat_prefix: `http.<prefix>.*`. Default 'ingress_http' (Contour's, so its method counts it). */
  statPrefix?: string
  /** Listener traffic_direction; `inboundonly` drains only INBOUND listeners. Default 'inbound'. */
  trafficDirection?: TrafficDirection
  /** Listener drain_type. 'modify_only' ignores /healthcheck/fail. Default 'default'. */
  drainType?: 'default' | 'modify_only'
  /** Envoy >= #47042: a non-graceful drain also drains connections, and skip_exit alone is allowed. Default true. */
  nonGracefulDrainNotifies?: boolean
  /** Envoy >= #37873: `inboundonly&graceful` drains only inbound listeners. Default true. */
  perDirectionDrain?: boolean
  /**
   * The proactive drain of the newest docs (draining.rst): connections still not draining after
   * 2/3 of the drain time are drained, idle ones closed, by its end. Envoy 1.40.0 does not do
   * it: an idle keep-alive connection stays open during and after the drain (envoyproxy/envoy#42305,
   * measured in test/real). Default false, as real Envoy.
   */
  proactiveIdleDrain?: boolean
  /** HCM idle_timeout for keep-alive connections. Default 3 600 000 (1 h). */
  idleTimeoutMs?: number
  /** Route timeout; 504 `upstream request timeout` when exceeded; 0 = none. Default 15 000. */
  upstreamTimeoutMs?: number
  /**
   * The inbound route's retry_on: 'reset-before-request' (Istio's inbound default since
   * 2024: retry only when no request byte went upstream), 'connect-failure', both
   * comma-separated, or 'none' (a route without a retry policy). Default 'reset-before-request'.
   */
  retryOn?: RetryOn | `${RetryOn},${RetryOn}`
  /** num_retries of that policy. Default 2 (Istio's). */
  upstreamRetries?: number
  /**
   * An outbound listener (traffic_direction OUTBOUND) forwarding to this URL: point the
   * app's own upstream calls (e.g. its registry client) at `outboundUrl`, so they count
   * among the listener connections, as behind Istio's iptables capture. Default none.
   */
  outbound?: string | URL
  /** Outbound listener port. Default 0. */
  outboundListen?: number
  /**
   * Istio's bootstrap: listener stats named as Istio's (`0.0.0.0_15006` inbound,
   * `0.0.0.0_15001` outbound) and its stats matcher, which keeps `downstream_cx_active`
   * only with EXIT_ON_ZERO_ACTIVE_CONNECTIONS; `statsInclusionSuffixes` adds suffixes as the
   * pod annotation `sidecar.istio.io/statsInclusionSuffixes` (ProxyConfig proxyStatsMatcher)
   * does, e.g. `downstream_rq_active`. false = plain Envoy, every stat. Default false.
   */
  istio?: false | { exitOnZeroActiveConnections?: boolean, statsInclusionSuffixes?: string[] }
  /** A blank line after each Prometheus family, as some Envoy versions print; 1.40.0 prints none. Default false. */
  promBlankLineBetweenFamilies?: boolean
  /** For the gradual strategy; tests make it deterministic. Default Math.random. */
  random?: () => number
  logger?: Logger
}

export interface ResolvedEnvoyOptions {
  upstream: URL
  listen: number
  host: string
  admin: number
  adminHost: string
  drainTimeMs: number
  drainStrategy: DrainStrategy
  preInitializeDelayMs: number
  initializeDelayMs: number
  statsFlushIntervalMs: number
  concurrency: number
  listenerName: string
  statPrefix: string
  trafficDirection: TrafficDirection
  drainType: 'default' | 'modify_only'
  nonGracefulDrainNotifies: boolean
  perDirectionDrain: boolean
  proactiveIdleDrain: boolean
  idleTimeoutMs: number
  upstreamTimeoutMs: number
  retryOn: RetryOn[]
  outbound: URL | null
  outboundListen: number
  istio: false | { exitOnZeroActiveConnections: boolean, statsInclusionSuffixes: string[] }
  upstreamRetries: number
  promBlankLineBetweenFamilies: boolean
  random: () => number
  logger: Logger
}

export function resolveEnvoyOptions (o: EnvoyOptions): ResolvedEnvoyOptions {
  if (typeof o !== 'object' || o === null) throw new InvalidOptionError('options', 'expected an object, e.g. { upstream: \'http://127.0.0.1:3000\' }')
  const upstream = httpUrl('upstream', o.upstream)
  // Core's kit; the names keep the resolved object below readable.
  const port = (option: string, v: unknown, fallback: number): number => count(option, v, fallback, { max: 65535 })
  const ms = (option: string, v: unknown, fallback: number): number => duration(option, v, fallback)
  const int = (option: string, v: unknown, fallback: number, min: number): number => count(option, v, fallback, { min })
  const bool = flag
  const pick = oneOf
  const name = (n: string, v: unknown, fallback: string): string => {
    const s = v ?? fallback
    if (typeof s !== 'string' || !/^[\w-]+$/.test(s)) throw new InvalidOptionError(n, `must be a name of letters, digits, '_' or '-', got ${show(s)}`)
    return s
  }
  return {
    upstream,
    listen: port('listen', o.listen, 0),
    host: o.host ?? '127.0.0.1',
    admin: port('admin', o.admin, 0),
    adminHost: o.adminHost ?? '127.0.0.1',
    drainTimeMs: ms('drainTimeMs', o.drainTimeMs, 45_000),
    drainStrategy: pick('drainStrategy', o.drainStrategy, ['immediate', 'gradual'], 'immediate'),
    preInitializeDelayMs: ms('preInitializeDelayMs', o.preInitializeDelayMs, 0),
    initializeDelayMs: ms('initializeDelayMs', o.initializeDelayMs, 0),
    statsFlushIntervalMs: ms('statsFlushIntervalMs', o.statsFlushIntervalMs, 5000) || 5000,
    concurrency: int('concurrency', o.concurrency, 2, 1),
    listenerName: name('listenerName', o.listenerName, 'ingress'),
    statPrefix: name('statPrefix', o.statPrefix, 'ingress_http'),
    trafficDirection: pick('trafficDirection', o.trafficDirection, ['inbound', 'outbound', 'unspecified'], 'inbound'),
    drainType: pick('drainType', o.drainType, ['default', 'modify_only'], 'default'),
    nonGracefulDrainNotifies: bool('nonGracefulDrainNotifies', o.nonGracefulDrainNotifies, true),
    perDirectionDrain: bool('perDirectionDrain', o.perDirectionDrain, true),
    proactiveIdleDrain: bool('proactiveIdleDrain', o.proactiveIdleDrain, false),
    idleTimeoutMs: ms('idleTimeoutMs', o.idleTimeoutMs, 3_600_000),
    upstreamTimeoutMs: ms('upstreamTimeoutMs', o.upstreamTimeoutMs, 15_000),
    retryOn: retryOn(o.retryOn),
    outbound: o.outbound === undefined ? null : httpUrl('outbound', o.outbound),
    outboundListen: port('outboundListen', o.outboundListen, 0),
    istio: istio(o.istio),
    upstreamRetries: int('upstreamRetries', o.upstreamRetries, 2, 0),
    promBlankLineBetweenFamilies: bool('promBlankLineBetweenFamilies', o.promBlankLineBetweenFamilies, false),
    random: o.random ?? Math.random,
    logger: o.logger ?? silentLogger
  }
}

function retryOn (value: unknown): RetryOn[] {
  const list = parseRetryOn(value ?? 'reset-before-request')
  if (list === null) throw new InvalidOptionError('retryOn', `must be ${RETRY_ON.map((r) => `'${r}'`).join(', ')} or a comma-separated list of the first two, got ${show(value)}`)
  return list
}

function httpUrl (option: string, value: unknown): URL {
  let url: URL
  try {
    url = new URL(String(value))
  } catch {
    throw new InvalidOptionError(option, `must be an http:// URL, e.g. 'http://127.0.0.1:3000', got ${show(value)}`)
  }
  if (url.protocol !== 'http:') throw new InvalidOptionError(option, `must be an http:// URL (the proxy speaks HTTP/1.1 upstream), got '${url.href}'`)
  return url
}

function istio (value: unknown): ResolvedEnvoyOptions['istio'] {
  if (value === undefined || value === false) return false
  const o = typeof value === 'object' && value !== null ? value as { exitOnZeroActiveConnections?: unknown, statsInclusionSuffixes?: unknown } : undefined
  const exit = o === undefined ? undefined : o.exitOnZeroActiveConnections ?? false
  const suffixes = o === undefined ? undefined : o.statsInclusionSuffixes ?? []
  if (typeof exit !== 'boolean' || !Array.isArray(suffixes) || suffixes.some((x) => typeof x !== 'string')) {
    throw new InvalidOptionError('istio', `must be false or { exitOnZeroActiveConnections: boolean, statsInclusionSuffixes?: string[] }, got ${show(value)}`)
  }
  return { exitOnZeroActiveConnections: exit, statsInclusionSuffixes: [...suffixes as string[]] }
}
