// `npm start`: the same rolling update on the Eureka path as a 2×2 — a plain consumer
// (what services run today) and the lameduck balancer, each against naive providers
// and lameduck providers — repeated `runs` times, printed as medians with their spread,
// with a chart of each cell's median run. `--record` also writes the table into the
// README (between markers) and the chart to docs/rollout.svg.
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { count } from '@lameduck/core'
import { resolve } from 'node:path'
import { asFlags, numeric } from '../flags.ts'
import { renderChart } from './chart.ts'
import type { RegistryKind, RolloutMode } from './options.ts'
import type { RolloutReport } from './report.ts'
import { runRollout } from './rollout.ts'
import { cellsMarkdown, cellsTable, medianRun, type DemoCell } from './demo-table.ts'

export interface DemoOptions {
  registry?: RegistryKind
  /** Repetitions of each cell. Default 1. */
  runs?: number
  consumers?: Array<'plain' | 'balancer'>
  modes?: RolloutMode[]
  outDir?: string
  rps?: number
  /** Write the table into this README (between the demo markers) and the chart to `chartPath`. */
  record?: { readme: string, chartPath: string }
  out?: NodeJS.WritableStream & { isTTY?: boolean }
}

export const DEMO_MARKERS = { start: '<!-- demo:table:start (written by `npm run demo:record`) -->', end: '<!-- demo:table:end -->' }

export async function runDemo (options: DemoOptions = {}): Promise<DemoCell[]> {
  const out = options.out ?? process.stdout
  const registry = options.registry ?? 'eureka'
  const runs = options.runs ?? 1
  const rps = options.rps ?? 300
  const outDir = resolve(options.outDir ?? 'lameduck-demo')
  const tty = out.isTTY === true
  const started = Date.now()
  const say = (s: string): void => { out.write(`${tty ? '\r\x1b[2K' : ''}${s}\n`) }
  say(`lameduck demo: a Kubernetes rolling update of 3 providers behind ${registry === 'none' ? 'a Service' : registry} under ${rps} req/s,`)
  say(`production windows scaled ×0.05 (Eureka 30 s + 30 s + 30 s → 4.5 s), ${runs} run${runs === 1 ? '' : 's'} per cell\n`)
  const cells: DemoCell[] = []
  for (const consumer of options.consumers ?? ['plain', 'balancer']) {
    for (const mode of options.modes ?? ['naive', 'lameduck']) {
      const reports: RolloutReport[] = []
      for (let i = 1; i <= runs; i++) {
        const label = `${consumer} × ${mode} ${i}/${runs}`
        const progress = (line: string): void => {
          const elapsed = ((Date.now() - started) / 1000).toFixed(1).padStart(5)
          if (tty) out.write(`\r\x1b[2K[${elapsed} s] ${label.padEnd(22)} ${line.slice(0, 90)}`)
          else out.write(`[${elapsed} s] ${label.padEnd(22)} ${line}\n`)
        }
        const report = await runRollout({ registry, mode, consumer, rps, log: progress })
        reports.push(report)
        say(`${label}: ${report.total} requests, ${report.failed} failed`)
      }
      cells.push({ consumer, mode, reports })
    }
  }
  say('')
  say(cellsTable(cells))
  const chart = renderChart(cells.map((c) => ({ title: `${c.consumer} consumer × ${c.mode} providers (median of ${c.reports.length})`, report: medianRun(c.reports) })))
  await mkdir(outDir, { recursive: true })
  await writeFile(resolve(outDir, 'rollout.svg'), chart)
  await writeFile(resolve(outDir, 'rollout.json'), JSON.stringify(cells, null, 2))
  say(`\nchart: ${resolve(outDir, 'rollout.svg')}\nreports: ${resolve(outDir, 'rollout.json')}`)
  if (options.record) {
    await writeReadmeTable(options.record.readme, cellsMarkdown(cells, { registry, rps }))
    await writeFile(options.record.chartPath, chart)
    say(`recorded: ${options.record.readme} (table), ${options.record.chartPath}`)
  }
  say(`(${((Date.now() - started) / 1000).toFixed(0)} s)`)
  return cells
}

/** Replaces what lies between the demo markers; the markers must be there. */
async function writeReadmeTable (readme: string, table: string): Promise<void> {
  const text = await readFile(readme, 'utf8')
  const a = text.indexOf(DEMO_MARKERS.start)
  const b = text.indexOf(DEMO_MARKERS.end)
  if (a === -1 || b < a) throw new Error(`${readme} has no demo markers: add the lines\n${DEMO_MARKERS.start}\n${DEMO_MARKERS.end}`)
  await writeFile(readme, `${text.slice(0, a + DEMO_MARKERS.start.length)}\n${table}\n${text.slice(b)}`)
}

export const DEMO_USAGE = `Usage: lameduck-devkit demo [options]

The rollout lab on the Eureka path as a 2×2: a plain consumer (round robin, keep-alive,
no retries) and @lameduck/balancer, each against naive and lameduck providers. Prints
the medians with their spread, writes a chart and the JSON reports to ./lameduck-demo/.
About 80 s per run of the four cells.

Options:
  --runs N        repetitions of each cell                         [1]
  --rps N         request rate                                     [300]
  --out DIR       where the chart and reports go                   [lameduck-demo]
  --record        also write the table into README.md (between its demo markers)
                  and the chart to docs/rollout.svg (npm run demo:record: --runs 5)
`

export async function runDemoCli (argv: string[]): Promise<void> {
  const { parseArgs } = await import('node:util')
  const { values } = parseArgs({ args: argv, options: { runs: { type: 'string' }, rps: { type: 'string' }, out: { type: 'string' }, record: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } })
  if (values.help) { process.stdout.write(DEMO_USAGE); return }
  const runs = count('--runs', values.runs === undefined ? undefined : numeric('--runs', values.runs), 1, { min: 1 })
  await asFlags({ rps: '--rps', outDir: '--out' }, () => runDemo({
    runs,
    ...(values.rps !== undefined ? { rps: numeric('--rps', values.rps) } : {}),
    ...(values.out !== undefined ? { outDir: values.out } : {}),
    ...(values.record ? { record: { readme: resolve('README.md'), chartPath: resolve('docs/rollout.svg') } } : {})
  }))
}
