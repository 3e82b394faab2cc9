// Parser for `/stats?format=json`: {"stats":[{"name":"c1","value":10}, ...]}, where a text
// readout has a string value and a final element may hold {"histograms": ...}. Pure and
// total: garbage yields null, never an exception.

export interface JsonStat {
  name: string
  /** A finite non-negative number for counters and gauges; null for readouts and bad values. */
  value: number | null
}

/** Returns the stats, or null when the body is not Envoy's JSON stats shape. */
export function parseStatsJson (body: unknown): JsonStat[] | null {
  if (typeof body !== 'string' || body.length === 0) return null
  let doc: unknown
  try {
    doc = JSON.parse(body)
  } catch {
    return null
  }
  if (typeof doc !== 'object' || doc === null || !Array.isArray((doc as { stats?: unknown }).stats)) return null
  const out: JsonStat[] = []
  for (const entry of (doc as { stats: unknown[] }).stats) {
    if (typeof entry !== 'object' || entry === null) continue
    const { name, value } = entry as { name?: unknown, value?: unknown }
    if (typeof name !== 'string') continue // e.g. the {"histograms": ...} element
    const ok = typeof value === 'number' && Number.isFinite(value) && value >= 0
    out.push({ name, value: ok ? value : null })
  }
  return out
}
