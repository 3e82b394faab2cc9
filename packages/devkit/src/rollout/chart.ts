// A self-contained SVG of rollouts: requests per second per instance (stacked),
// failures per second in red below the axis, and pod events as ticks. Every panel
// shares the same time axis, the same rate scale and the same failure scale, each
// labelled, so panels compare at a glance.
import type { RolloutReport } from './report.ts'

const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#76b7b2', '#edc948', '#9c755f', '#bab0ac', '#e15759', '#ff9da7']

function esc (s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!)
}

const perSecond = (report: RolloutReport): number => 1000 / report.timeline.bucketMs
const okRate = (report: RolloutReport): number[] => report.timeline.buckets.map((b) => Object.values(b.perInstance).reduce((s, n) => s + n, 0) * perSecond(report))

/** A round axis maximum ≥ v: 1, 2, 5 × 10^n. */
function niceCeil (v: number): number {
  const p = 10 ** Math.floor(Math.log10(Math.max(1, v)))
  return [1, 2, 5, 10].map((m) => m * p).find((n) => n >= v) ?? 10 * p
}

/** One panel per report, stacked vertically (e.g. naive above lameduck), on shared axes. */
export function renderChart (reports: Array<{ title: string, report: RolloutReport }>, width = 960, panelHeight = 220): string {
  const ids = [...new Set(reports.flatMap((r) => r.report.instances.map((i) => i.id)))]
  const colour = new Map(ids.map((id, i) => [id, PALETTE[i % PALETTE.length]!]))
  const left = 76
  const right = 16
  const plotW = width - left - right
  const panels: string[] = []
  // Shared scales: the longest run, the highest rate, the most failures per second.
  const duration = Math.max(1, ...reports.map((r) => r.report.durationMs))
  const maxOk = niceCeil(Math.max(1, ...reports.flatMap((r) => okRate(r.report))))
  const maxFail = niceCeil(Math.max(1, ...reports.flatMap((r) => r.report.timeline.buckets.map((b) => b.failed * perSecond(r.report)))))
  let y0 = 0
  for (const { title, report } of reports) {
    const { buckets, bucketMs, markers } = report.timeline
    const perSec = perSecond(report)
    const top = y0 + 34
    const okH = panelHeight * 0.72
    const failH = panelHeight * 0.18
    const axis = top + okH
    const x = (t: number): number => left + (t / duration) * plotW
    const parts: string[] = []
    parts.push(`<text x="${left}" y="${y0 + 18}" font-size="14" font-weight="bold">${esc(title)}</text>`)
    parts.push(`<text x="${width - right}" y="${y0 + 18}" font-size="12" text-anchor="end" fill="${report.failed > 0 ? '#c0392b' : '#2e7d32'}">${report.total} requests, ${report.failed} failed (refused ${report.failures.refused}, no instance ${report.failures.noInstance}, reset ${report.failures.reset}, 5xx ${report.failures.status5xx}, timeout ${report.failures.timeout})</text>`)
    // Stacked areas, one per instance, in a stable order.
    let lower = buckets.map(() => 0)
    for (const id of ids) {
      const upper = buckets.map((b, i) => lower[i]! + (b.perInstance[id] ?? 0) * perSec)
      if (upper.every((v, i) => v === lower[i])) continue
      const pts = buckets.map((b, i) => `${x(b.t).toFixed(1)},${(axis - (upper[i]! / maxOk) * okH).toFixed(1)}`)
      const back = buckets.map((b, i) => `${x(b.t).toFixed(1)},${(axis - (lower[i]! / maxOk) * okH).toFixed(1)}`).reverse()
      parts.push(`<polygon points="${[...pts, ...back].join(' ')}" fill="${colour.get(id)}" fill-opacity="0.85"><title>${esc(id)}</title></polygon>`)
      lower = upper
    }
    for (const b of buckets) {
      if (b.failed === 0) continue
      const h = (b.failed * perSec / maxFail) * failH
      parts.push(`<rect x="${x(b.t).toFixed(1)}" y="${(axis + 4).toFixed(1)}" width="${Math.max(1.5, plotW * bucketMs / duration).toFixed(1)}" height="${h.toFixed(1)}" fill="#c0392b"/>`)
    }
    parts.push(`<line x1="${left}" y1="${axis}" x2="${width - right}" y2="${axis}" stroke="#333"/>`)
    parts.push(`<text x="${left - 6}" y="${top + 4}" font-size="10" text-anchor="end">${maxOk} ok/s</text>`)
    parts.push(`<text x="${left - 6}" y="${axis}" font-size="10" text-anchor="end">0</text>`)
    // The failure scale, downwards from the axis: the same in every panel.
    parts.push(`<line x1="${left - 3}" y1="${axis + 4}" x2="${left - 3}" y2="${(axis + 4 + failH).toFixed(1)}" stroke="#c0392b"/>`)
    parts.push(`<text x="${left - 6}" y="${(axis + 4 + failH).toFixed(1)}" font-size="10" text-anchor="end" fill="#c0392b">${maxFail} failed/s</text>`)
    for (const m of markers) {
      const mx = x(m.t).toFixed(1)
      parts.push(`<line x1="${mx}" y1="${top}" x2="${mx}" y2="${axis}" stroke="#555" stroke-dasharray="2,3" stroke-width="0.7"><title>${esc(m.label)} at ${m.t} ms</title></line>`)
    }
    for (let s = 0; s <= duration; s += 5_000) parts.push(`<text x="${x(s).toFixed(1)}" y="${axis + failH + 16}" font-size="10" text-anchor="middle">${s / 1000}s</text>`)
    panels.push(parts.join('\n'))
    y0 += panelHeight + 40
  }
  const legend = ids.map((id, i) => `<rect x="${left + i * 130}" y="${y0 + 2}" width="10" height="10" fill="${colour.get(id)}"/><text x="${left + i * 130 + 14}" y="${y0 + 11}" font-size="11">${esc(id)}</text>`).join('') +
    `<line x1="${left + ids.length * 130}" y1="${y0}" x2="${left + ids.length * 130}" y2="${y0 + 12}" stroke="#555" stroke-dasharray="2,3"/><text x="${left + ids.length * 130 + 6}" y="${y0 + 11}" font-size="11">pod deleted / ready</text>`
  const height = y0 + 24
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n${panels.join('\n')}\n${legend}\n</svg>\n`
}
