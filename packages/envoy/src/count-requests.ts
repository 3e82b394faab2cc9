// Requests in flight and served on Envoy's HTTP connection managers, from one JSON stats
// body. With the connection count this tells an idle connection from a busy one: real
// Envoy never closes an idle keep-alive connection during or after a drain
// (envoyproxy/envoy#42305), so "0 connections" may never come, while "0 requests in
// flight and none arriving" does. Pure and total: -1 means unavailable, never a throw.
import { CONTOUR_EXCLUDED_PREFIXES } from './count-connections.ts'
import { parseStatsJson } from './parse-stats-json.ts'

/** One query for both gauges: `http.<stat_prefix>.downstream_rq_active` and `..._total`. */
export const REQUEST_STATS_PATH = '/stats?filter=^http\\..*\\.downstream_rq_(active|total)$&format=json'

export interface RequestCountOptions {
  /** HCM stat prefixes not to count. Default Contour's own (`admin`, `envoy-admin`, `stats`, ...). */
  excludePrefixes?: readonly string[]
  /** Count only HCM prefixes matching this. Default: the `inbound*` ones when there are any, else every prefix but `outbound*`. */
  include?: RegExp
}

export interface RequestCount {
  /** Requests in flight on the counted HCMs, -1 when unavailable. */
  active: number
  /** Requests those HCMs received since Envoy started, -1 when unavailable. */
  total: number
  /** The HCM prefixes counted. */
  prefixes: string[]
  reason?: string
}

const RQ_STAT = /^http\.(.+)\.downstream_rq_(active|total)$/

/**
 * Sums the request gauges of the HCMs that serve the app: Istio's inbound HCMs
 * (`inbound_0.0.0.0_8080`) when present, else every HCM but the admin's, Contour's own and
 * the outbound ones (the app's own calls are not requests to it).
 */
export function countRequests (body: unknown, options: RequestCountOptions = {}): RequestCount {
  const stats = parseStatsJson(body)
  if (stats === null) return { active: -1, total: -1, prefixes: [], reason: 'not an Envoy JSON stats response' }
  const excluded = new Set(options.excludePrefixes ?? CONTOUR_EXCLUDED_PREFIXES)
  const byPrefix = new Map<string, { active?: number | null, total?: number | null }>()
  for (const { name, value } of stats) {
    const m = RQ_STAT.exec(name)
    if (m === null || excluded.has(m[1]!)) continue
    const entry = byPrefix.get(m[1]!) ?? {}
    entry[m[2] as 'active' | 'total'] = value
    byPrefix.set(m[1]!, entry)
  }
  const all = [...byPrefix.keys()]
  const inbound = all.filter((p) => p.startsWith('inbound'))
  const prefixes = options.include !== undefined
    ? all.filter((p) => options.include!.test(p))
    : inbound.length > 0 ? inbound : all.filter((p) => !p.startsWith('outbound'))
  // Istio's default stats matcher keeps no http.* stat: no evidence, not "no requests".
  if (prefixes.length === 0) return { active: -1, total: -1, prefixes, reason: 'no http.*.downstream_rq_active stat in the response' }
  let active = 0
  let total = 0
  for (const p of prefixes) {
    const e = byPrefix.get(p)!
    if (typeof e.active !== 'number' || typeof e.total !== 'number') return { active: -1, total: -1, prefixes, reason: `http.${p}: downstream_rq_active/total missing or not a number` }
    active += e.active
    total += e.total
  }
  return { active, total, prefixes }
}
