// How many downstream connections Envoy still holds, computed from a stats body the
// way the field does it. Pure functions: -1 means "unavailable" (empty, garbage, or the
// stat is missing), never an exception.
import { parsePrometheus } from './parse-prometheus.ts'
import { parseStatsJson } from './parse-stats-json.ts'
import { parseStatsText } from './parse-stats-text.ts'

export type ConnectionCountMethod = 'istio' | 'contour' | 'json'

export interface ListenerCountOptions {
  /**
   * Wildcard listeners `listener.0.0.0.0_<port>` not to count: Istio's health (15021) and
   * Prometheus (15090) listeners by default. Istio's tests use 15009 for Prometheus.
   */
  excludePorts?: readonly number[]
  /** When set, only stats whose raw name matches are counted (e.g. only the inbound listener). */
  include?: RegExp
  /**
   * Listener stat addresses (`0.0.0.0_15006`) that are inbound: when the stats carry one
   * of them, only they count. After an inbound-only drain the app's own outbound
   * connections (to its registry or database) stay open until it exits, and Istio's
   * rule, which sums every listener, would never reach 0. Default none: every listener.
   */
  inboundListeners?: readonly string[]
}

export interface ContourCountOptions {
  /** HCM stat prefixes not to count. Default: Contour's `admin`, `envoy-admin`, `stats`, `health`, `stats-health`. */
  excludePrefixes?: readonly string[]
  /** When set, only HCM stat prefixes that match are counted. */
  include?: RegExp
}

export interface ConnectionCount {
  /** Sum of active connections, or -1 when unavailable. */
  count: number
  /** Why the count is -1. */
  reason?: string
}

/** Istio's inbound capture listener (virtualInbound), IPv4 and IPv6 stat names. */
export const ISTIO_INBOUND_LISTENERS: readonly string[] = ['0.0.0.0_15006', '[__]_15006']
export const DEFAULT_EXCLUDED_PORTS: readonly number[] = [15021, 15090]
export const CONTOUR_EXCLUDED_PREFIXES: readonly string[] = ['admin', 'envoy-admin', 'stats', 'health', 'stats-health']
export const CONTOUR_STAT = 'envoy_http_downstream_cx_active'

/** The query each method sends (raw names: Envoy matches `filter` against dotted stat names). */
export const CONNECTION_STATS_PATHS: Readonly<Record<ConnectionCountMethod, string>> = {
  // Istio pkg/envoy/agent.go activeProxyConnections(), verbatim.
  istio: '/stats?usedonly&filter=downstream_cx_active$',
  // Contour cmd/contour/shutdownmanager.go, verbatim.
  contour: '/stats/prometheus?filter=^http\\..*\\.downstream_cx_active$',
  // Envoy Gateway internal/cmd/envoy/shutdown_manager.go.
  json: '/stats?filter=^listener\\..*\\.downstream_cx_active$&format=json'
}

const LISTENER_STAT = /^listener\..+\.downstream_cx_active$/

/**
 * Istio's listener rules: only `listener.*`, because http listeners count under both `http.`
 * and `listener.`; never per-handler duplicates (`worker_N`), ambient internal listeners,
 * the admin listener, or the excluded wildcard ports.
 */
export function isCountedListenerStat (name: string, options: ListenerCountOptions = {}): boolean {
  if (!LISTENER_STAT.test(name)) return false
  if (name.includes('worker_')) return false
  if (name.startsWith('listener.envoy_internal_')) return false
  if (name === 'listener.admin.downstream_cx_active' || name === 'listener.admin.main_thread.downstream_cx_active') return false
  for (const port of options.excludePorts ?? DEFAULT_EXCLUDED_PORTS) {
    if (name === `listener.0.0.0.0_${port}.downstream_cx_active`) return false
  }
  return options.include === undefined || options.include.test(name)
}

function sumListeners (stats: Array<{ name: string, value: number | null }>, options: ListenerCountOptions): ConnectionCount {
  let sum = 0
  let seen = false
  const inbound = new Set((options.inboundListeners ?? []).map((a) => `listener.${a}.downstream_cx_active`))
  const inboundOnly = stats.some((s) => inbound.has(s.name))
  for (const { name, value } of stats) {
    if (!LISTENER_STAT.test(name)) continue
    seen = true
    if (inboundOnly && !inbound.has(name)) continue
    if (!isCountedListenerStat(name, options)) continue
    if (value === null) return { count: -1, reason: `stat '${name}' has no numeric value` }
    sum += value
  }
  // No listener stat at all: the stats matcher dropped it (Istio without
  // EXIT_ON_ZERO_ACTIVE_CONNECTIONS) or this is not Envoy. Not the same as 0.
  if (!seen) return { count: -1, reason: 'no listener.*.downstream_cx_active stat in the response' }
  return { count: sum }
}

/** Istio's method on a `/stats?usedonly&filter=downstream_cx_active$` text body. */
export function countIstio (body: unknown, options: ListenerCountOptions = {}): ConnectionCount {
  if (typeof body !== 'string' || body.trim() === '') return { count: -1, reason: 'empty stats response' }
  return sumListeners(parseStatsText(body), options)
}

/** Istio's listener rules on a `/stats?format=json` body (Envoy Gateway's query). */
export function countJson (body: unknown, options: ListenerCountOptions = {}): ConnectionCount {
  const stats = parseStatsJson(body)
  if (stats === null) return { count: -1, reason: 'not an Envoy JSON stats response' }
  return sumListeners(stats, options)
}

/** Contour's method on a `/stats/prometheus` body: sum `envoy_http_downstream_cx_active` minus its own HCMs. */
export function countContour (body: unknown, options: ContourCountOptions = {}): ConnectionCount {
  const scrape = parsePrometheus(body)
  if (scrape.malformed.includes(CONTOUR_STAT)) return { count: -1, reason: `malformed '${CONTOUR_STAT}' sample` }
  const excluded = new Set(options.excludePrefixes ?? CONTOUR_EXCLUDED_PREFIXES)
  let sum = 0
  let seen = false
  for (const sample of scrape.samples) {
    if (sample.name !== CONTOUR_STAT) continue
    seen = true
    const values = Object.values(sample.labels)
    // Contour adds the gauge once per non-excluded label; Envoy gives this family one
    // label, so counting the sample once is the same and cannot double count.
    if (values.some((v) => excluded.has(v))) continue
    if (options.include !== undefined && !values.some((v) => options.include!.test(v))) continue
    if (!Number.isFinite(sample.value) || sample.value < 0) return { count: -1, reason: `'${CONTOUR_STAT}' has value ${sample.value}` }
    sum += sample.value
  }
  if (!seen && !scrape.types.has(CONTOUR_STAT)) {
    return { count: -1, reason: `error finding Prometheus stat "${CONTOUR_STAT}" in the request result` }
  }
  return { count: sum }
}

export function countConnections (method: ConnectionCountMethod, body: unknown, options: ListenerCountOptions & ContourCountOptions = {}): ConnectionCount {
  if (method === 'contour') return countContour(body, { excludePrefixes: options.excludePrefixes, include: options.include })
  if (method === 'json') return countJson(body, options)
  return countIstio(body, options)
}
