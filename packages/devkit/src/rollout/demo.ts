// `npm start`: the same rolling update twice on the Eureka path — once as teams
// do it today (naive), once with lameduck — printed side by side, with a chart.
import { mkdir, writeFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { renderChart } from './chart.ts'
import type { RegistryKind, RolloutMode } from './options.ts'
import type { RolloutReport } from './report.ts'
import { runRollout } from './rollout.ts'
import { summaryTable } from './summary.ts'

export interface DemoOptions {
  registry?: RegistryKind
  modes?: RolloutMode[]
  outDir?: string
  rps?: number
  out?: NodeJS.WritableStream & { isTTY?: boolean }
}

export async function runDemo (options: DemoOptions = {}): Promise<Array<{ title: string, report: RolloutReport }>> {
  const out = options.out ?? process.stdout
  const registry = options.registry ?? 'eureka'
  const modes = options.modes ?? ['naive', 'lameduck']
  const outDir = resolve(options.outDir ?? 'lameduck-demo')
  const tty = out.isTTY === true
  const started = Date.now()
  const say = (s: string): void => { out.write(`${tty ? '\r\x1b[2K' : ''}${s}\n`) }
  say(`lameduck demo: a Kubernetes rolling update of 3 providers behind ${registry === 'none' ? 'a Service' : registry} under ${options.rps ?? 300} req/s,`)
  say('production windows scaled ×0.05 (Eureka 30 s + 30 s + 30 s → 4.5 s, + 1 s margin)\n')
  const runs: Array<{ title: string, report: RolloutReport }> = []
  for (const mode of modes) {
    let last = ''
    const progress = (line: string): void => {
      last = line
      const elapsed = ((Date.now() - started) / 1000).toFixed(1).padStart(5)
      if (tty) out.write(`\r\x1b[2K[${elapsed} s] ${mode.padEnd(8)} ${last.slice(0, 100)}`)
      else out.write(`[${elapsed} s] ${mode.padEnd(8)} ${last}\n`)
    }
    const report = await runRollout({ registry, mode, rps: options.rps ?? 300, log: progress })
    runs.push({ title: mode, report })
    say(`${mode}: ${report.total} requests, ${report.failed} failed`)
  }
  say('')
  say(summaryTable(runs))
  await mkdir(outDir, { recursive: true })
  const chart = resolve(outDir, 'rollout.svg')
  await writeFile(chart, renderChart(runs.map((r) => ({ title: `${registry} / ${r.title}`, report: r.report }))))
  await writeFile(resolve(outDir, 'rollout.json'), JSON.stringify(runs, null, 2))
  say(`\nchart: ${chart}\nreports: ${resolve(outDir, 'rollout.json')}\n(${((Date.now() - started) / 1000).toFixed(0)} s)`)
  return runs
}
