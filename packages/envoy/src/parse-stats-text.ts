// Parser for Envoy's `/stats` text format: `name: value\n` for counters and gauges,
// `name: "text"` for text readouts, `name: P0(..) ...` for histograms. Pure and total:
// any input, including non-strings, yields a result and never throws.

export interface TextStat {
  name: string
  /** The integer value of a counter or gauge; null when the value is not one (readout, histogram, garbage). */
  value: number | null
}

const NAME = /^[^\s:]+$/
const UINT = /^\d+$/

/**
 * Splits a `/stats` body into stats. Lines that do not look like `name: value` are dropped.
 * Trailing spaces are tolerated (Istio's test data has them). Returns [] for anything that
 * is not a string.
 */
export function parseStatsText (body: unknown): TextStat[] {
  if (typeof body !== 'string' || body.length === 0) return []
  const out: TextStat[] = []
  for (const line of body.split('\n')) {
    // Istio splits on ':' and wants exactly two parts; stat names never contain ':'
    // (Envoy writes IPv6 listener addresses with '_').
    const colon = line.indexOf(':')
    if (colon <= 0) continue
    const name = line.slice(0, colon).trim()
    if (!NAME.test(name)) continue
    const raw = line.slice(colon + 1).trim()
    const value = UINT.test(raw) && raw.length <= 16 ? Number(raw) : null
    out.push({ name, value })
  }
  return out
}
