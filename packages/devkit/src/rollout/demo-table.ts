// The demo's numbers: each cell (consumer × provider mode) over N runs, as the
// median with its spread (min–max), for the terminal and for the README.
import type { RolloutMode } from './options.ts'
import type { RolloutReport } from './report.ts'

export interface DemoCell { consumer: 'plain' | 'balancer', mode: RolloutMode, reports: RolloutReport[] }

export function median (xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length === 0 ? 0 : s.length % 2 === 1 ? s[m]! : Math.round((s[m - 1]! + s[m]!) / 2)
}

/** The run whose failure count is the median (the lower one for an even count): the run the chart draws. */
export function medianRun (reports: RolloutReport[]): RolloutReport {
  const sorted = [...reports].sort((a, b) => a.failed - b.failed)
  return sorted[(sorted.length - 1) >> 1]!
}

const spread = (xs: number[]): string => xs.length === 1 ? String(xs[0]) : `${median(xs)} (${Math.min(...xs)}–${Math.max(...xs)})`
const sec = (ms: number): string => `${(ms / 1000).toFixed(1)} s`

function row (c: DemoCell): string[] {
  const r = c.reports
  const failed = r.map((x) => x.failed)
  const kinds = (['refused', 'noInstance', 'reset', 'status5xx', 'timeout', 'other'] as const)
    .map((k) => [k, median(r.map((x) => x.failures[k]))] as const).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(', ')
  const lag = Math.max(...r.map((x) => Math.max(x.eventLoopLag.consumer.p99Ms, x.eventLoopLag.providers.p99Ms)))
  return [
    c.consumer === 'plain' ? 'plain (round robin, no retries)' : '@lameduck/balancer',
    c.mode === 'lameduck' ? '`lameduck prestop`' : c.mode === 'sleep' ? '`sleep`' : 'naive (close on SIGTERM)',
    spread(failed),
    `${((100 * median(failed)) / Math.max(1, median(r.map((x) => x.total)))).toFixed(2)} %`,
    kinds === '' ? '–' : kinds,
    String(median(r.map((x) => x.total))),
    String(r.reduce((n, x) => n + x.offline.filter((o) => o.killed).length, 0)),
    sec(median(r.map((x) => x.rolloutMs))),
    `${lag} ms`
  ]
}

const HEAD = ['consumer', 'providers', 'failed: median (min–max)', 'failed %', 'failures (median)', 'requests', 'SIGKILLed (all runs)', 'rollout time', 'event-loop lag p99 (max)']

/** The terminal's table, under 100 columns: short labels, and each cell's failure kinds on a line below. */
export function cellsTable (cells: DemoCell[]): string {
  const head = ['consumer', 'providers', 'failed (min–max)', 'failed %', 'requests', 'SIGKILLed', 'rollout', 'lag p99']
  const rows = [head, ...cells.map((c) => {
    const r = row(c)
    return [c.consumer, c.mode, r[2]!, r[3]!, r[5]!, r[6]!, r[7]!, r[8]!]
  })]
  const widths = head.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  const line = (r: string[]): string => r.map((s, i) => i < 2 ? s.padEnd(widths[i]!) : s.padStart(widths[i]!)).join(' │ ')
  const kinds = cells.map((c) => `${c.consumer} × ${c.mode}: ${row(c)[4]}`)
  return [line(rows[0]!), widths.map((w) => '─'.repeat(w)).join('─┼─'), ...rows.slice(1).map(line), '', 'failures (median):', ...kinds.map((k) => `  ${k}`)].join('\n')
}

export function cellsMarkdown (cells: DemoCell[], run: { registry: string, rps: number }): string {
  const n = cells[0]?.reports.length ?? 0
  const when = new Date().toISOString().slice(0, 10)
  return [
    `*${n} runs per cell on ${when}, ${run.registry} path, ${run.rps} req/s; failed: median (min–max).*`,
    '',
    `| ${HEAD.join(' | ')} |`,
    `|${HEAD.map((_, i) => i < 2 ? '---' : '---:').join('|')}|`,
    ...cells.map((c) => `| ${row(c).join(' | ')} |`)
  ].join('\n')
}
