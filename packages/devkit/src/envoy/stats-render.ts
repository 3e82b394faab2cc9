// `/stats` and `/stats/prometheus` as Envoy renders them (stats_params.cc,
// stats_render.cc, prometheus_stats.cc): presence-only flags, `filter` as a partial
// match on raw names, text `name: value`, compact JSON, Prometheus with `# TYPE`, labels
// in extraction order, `name{}` for untagged stats and a blank line after each family.
import type { Stat, StatStore } from './stats-store.ts'

export interface AdminReply { status: number, body: string, contentType?: string }

const TEXT = 'text/plain; charset=UTF-8'
const FORMATS = ['text', 'json', 'prometheus', 'html', 'active-html']
const TYPES = ['All', 'Counters', 'Gauges', 'Histograms', 'TextReadouts']
const BUCKETS = ['cumulative', 'disjoint', 'detailed', 'none']

/**
 * Envoy's query parsing: `&`-separated, percent-decoded (a `+` stays a `+`), first value
 * wins, a bare `name` is present with an empty value.
 */
export function parseQuery (rawQuery: string): Map<string, string> {
  const params = new Map<string, string>()
  for (const part of rawQuery.split('&')) {
    if (part === '') continue
    const eq = part.indexOf('=')
    const key = decode(eq === -1 ? part : part.slice(0, eq))
    if (!params.has(key)) params.set(key, eq === -1 ? '' : decode(part.slice(eq + 1)))
  }
  return params
}

function decode (s: string): string {
  try { return decodeURIComponent(s) } catch { return s }
}

const POSIX_CLASSES: Record<string, string> = {
  alnum: 'a-zA-Z0-9', alpha: 'a-zA-Z', digit: '0-9', lower: 'a-z', upper: 'A-Z', space: '\\s', xdigit: '0-9a-fA-F', word: '\\w', punct: '!-\\/:-@\\[-`{-~'
}

/** Compiles an RE2 pattern as a JS RegExp, refusing what RE2 refuses (lookaround, backreferences). */
export function compileRe2 (pattern: string): RegExp | null {
  if (/\(\?<?[=!]|\\[1-9]|\\k</.test(pattern)) return null
  try {
    return new RegExp(pattern.replace(/\[:(\w+):\]/g, (m, name: string) => POSIX_CLASSES[name] ?? m))
  } catch {
    return null
  }
}

/** GET /stats (and /stats/prometheus with `prometheus` true). */
export function renderStats (store: StatStore, query: Map<string, string>, options: { prometheus?: boolean, blankLineBetweenFamilies?: boolean } = {}): AdminReply {
  const usedOnly = query.has('usedonly')
  const filterText = query.get('filter')
  let filter: RegExp | null = null
  if (filterText !== undefined && filterText !== '') {
    filter = compileRe2(filterText)
    if (filter === null) return { status: 400, body: 'Invalid re2 regex' }
  }
  const buckets = query.get('histogram_buckets')
  if (buckets !== undefined && buckets !== '' && !BUCKETS.includes(buckets)) {
    return { status: 400, body: 'usage: /stats?histogram_buckets=(cumulative|disjoint|detailed|none)\n' }
  }
  let format = options.prometheus === true ? 'prometheus' : 'text'
  const formatParam = query.get('format')
  if (options.prometheus !== true && formatParam !== undefined && formatParam !== '') {
    if (!FORMATS.includes(formatParam)) return { status: 400, body: 'usage: /stats?format=(html|active-html|json|prometheus|text)\n\n' }
    format = formatParam
  }
  const type = query.get('type')
  if (type !== undefined && type !== '' && !TYPES.includes(type)) return { status: 400, body: 'invalid &type= param' }

  const wanted = store.all().filter((s) =>
    (!usedOnly || s.used) &&
    (filter === null || filter.test(s.name)) &&
    (type === undefined || type === '' || type === 'All' || (type === 'Counters' && s.kind === 'counter') || (type === 'Gauges' && s.kind === 'gauge')))

  if (format === 'json') {
    const doc = { stats: wanted.map((s) => ({ name: s.name, value: s.value })) }
    return { status: 200, body: query.has('pretty') ? JSON.stringify(doc, null, 2) : JSON.stringify(doc), contentType: 'application/json' }
  }
  if (format === 'prometheus') return { status: 200, body: renderPrometheus(wanted, options.blankLineBetweenFamilies ?? true) }
  const text = wanted.map((s) => `${s.name}: ${s.value}\n`).join('')
  if (format === 'html' || format === 'active-html') {
    return { status: 200, body: `<!DOCTYPE html>\n<html><body><pre>\n${escapeHtml(text)}</pre></body></html>\n`, contentType: 'text/html; charset=UTF-8' }
  }
  return { status: 200, body: text, contentType: TEXT }
}

/** Families: counters then gauges, each sorted by tag-extracted name; samples by raw name. */
export function renderPrometheus (stats: Stat[], blankLineBetweenFamilies: boolean): string {
  let out = ''
  for (const kind of ['counter', 'gauge'] as const) {
    const families = new Map<string, Stat[]>()
    for (const s of stats) {
      if (s.kind !== kind) continue
      const name = promName(s.tagName)
      const list = families.get(name) ?? []
      list.push(s)
      families.set(name, list)
    }
    for (const name of [...families.keys()].sort()) {
      out += `# TYPE ${name} ${kind}\n`
      for (const s of families.get(name)!.sort((a, b) => a.name < b.name ? -1 : 1)) {
        out += `${name}{${s.tags.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}} ${s.value}\n`
      }
      if (blankLineBetweenFamilies) out += '\n'
    }
  }
  return out
}

function promName (tagName: string): string {
  return 'envoy_' + tagName.replace(/[^a-zA-Z0-9_]/g, '_')
}

function escapeLabel (v: string): string {
  return v.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')
}

function escapeHtml (s: string): string {
  return s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')
}
