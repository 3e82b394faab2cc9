// Parser for the Prometheus text exposition format 0.0.4 as Envoy writes it on
// `/stats/prometheus`: `# TYPE name kind`, then `name{k="v",...} value` lines (`name{}` for
// untagged stats), with or without a blank line between families. Pure and total: a line it
// cannot read is recorded in `malformed` and skipped; nothing throws.

export interface PromSample {
  name: string
  labels: Record<string, string>
  value: number
}

export interface PromScrape {
  /** `# TYPE` declarations, by metric name. */
  types: Map<string, string>
  samples: PromSample[]
  /** Metric names (or '' when none could be read) of lines that were skipped as malformed. */
  malformed: string[]
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/

export function parsePrometheus (body: unknown): PromScrape {
  const scrape: PromScrape = { types: new Map(), samples: [], malformed: [] }
  if (typeof body !== 'string') return scrape
  for (const rawLine of body.split('\n')) {
    const line = rawLine.trim()
    if (line === '') continue
    if (line.startsWith('#')) {
      const m = /^#\s*TYPE\s+(\S+)\s+(\S+)\s*$/.exec(line)
      if (m !== null) scrape.types.set(m[1]!, m[2]!)
      continue // HELP and other comments
    }
    const sample = parseSampleLine(line)
    if (sample === null) scrape.malformed.push(METRIC_NAME.exec(line)?.[0] ?? '')
    else scrape.samples.push(sample)
  }
  return scrape
}

function parseSampleLine (line: string): PromSample | null {
  const nameMatch = METRIC_NAME.exec(line)
  if (nameMatch === null) return null
  const name = nameMatch[0]
  let i = name.length
  const labels: Record<string, string> = Object.create(null)
  if (line[i] === '{') {
    i++
    for (;;) {
      while (line[i] === ' ') i++
      if (line[i] === '}') { i++; break }
      const ln = LABEL_NAME.exec(line.slice(i))
      if (ln === null) return null
      i += ln[0].length
      while (line[i] === ' ') i++
      if (line[i] !== '=' || line[i + 1] !== '"') return null
      i += 2
      let value = ''
      for (;;) {
        const c = line[i]
        if (c === undefined) return null
        if (c === '"') { i++; break }
        if (c === '\\') {
          const next = line[i + 1]
          if (next === 'n') value += '\n'
          else if (next === '\\' || next === '"') value += next
          else return null
          i += 2
          continue
        }
        value += c
        i++
      }
      labels[ln[0]] = value
      while (line[i] === ' ') i++
      if (line[i] === ',') { i++; continue }
      if (line[i] === '}') { i++; break }
      return null
    }
  }
  const rest = line.slice(i).trim().split(/\s+/)
  if (rest.length < 1 || rest.length > 2 || rest[0] === '') return null
  const value = parsePromNumber(rest[0]!)
  if (value === null) return null
  return { name, labels, value }
}

function parsePromNumber (text: string): number | null {
  if (text === 'NaN') return NaN
  if (text === '+Inf' || text === 'Inf') return Infinity
  if (text === '-Inf') return -Infinity
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) return null
  return Number(text)
}
