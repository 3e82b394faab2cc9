import type { RolloutReport } from './report.ts'

const pct = (n: number, d: number): string => d === 0 ? '0 %' : `${((100 * n) / d).toFixed(2)} %`

/** A plain-text table of several runs side by side (one column per run). */
export function summaryTable (runs: Array<{ title: string, report: RolloutReport }>): string {
  const rows: Array<[string, (r: RolloutReport) => string]> = [
    ['requests', (r) => String(r.total)],
    ['failed', (r) => `${r.failed} (${pct(r.failed, r.total)})`],
    ['  refused', (r) => String(r.failures.refused)],
    ['  no instance to pick', (r) => String(r.failures.noInstance)],
    ['  reset', (r) => String(r.failures.reset)],
    ['  5xx', (r) => String(r.failures.status5xx)],
    ['  timeout', (r) => String(r.failures.timeout)],
    ['window (computed)', (r) => `${String(r.scenario.windowMs)} ms`],
    ['offline per pod (deleted → exit)', (r) => r.offline.map((o) => o.offlineMs).join(' / ') + ' ms'],
    ['last request after deletion', (r) => r.offline.map((o) => o.lastRequestAfterMs ?? '–').join(' / ') + ' ms'],
    ['calls while leaving (deleted → exit)', (r) => r.offline.map((o) => o.callsWhileLeaving).join(' / ')],
    ['SIGKILLed pods', (r) => String(r.offline.filter((o) => o.killed).length)],
    ['rollout time', (r) => `${r.rolloutMs} ms`],
    ['event-loop lag p99 / max', (r) => `consumer ${r.eventLoopLag.consumer.p99Ms} / ${r.eventLoopLag.consumer.maxMs} ms, providers ${r.eventLoopLag.providers.p99Ms} / ${r.eventLoopLag.providers.maxMs} ms`]
  ]
  const cols = runs.map((run) => [run.title, ...rows.map(([, f]) => f(run.report))])
  const head = ['', ...rows.map(([label]) => label)]
  const widths = [Math.max(...head.map((s) => s.length)), ...cols.map((c) => Math.max(...c.map((s) => s.length)))]
  const lines: string[] = []
  for (let i = 0; i < head.length; i++) {
    const cells = [head[i]!.padEnd(widths[0]!), ...cols.map((c, j) => c[i]!.padStart(widths[j + 1]!))]
    lines.push(cells.join('  │  '))
    if (i === 0) lines.push(widths.map((w) => '─'.repeat(w)).join('──┼──'))
  }
  return lines.join('\n')
}
