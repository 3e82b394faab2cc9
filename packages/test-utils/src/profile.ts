// Where a callgrind count goes, by function: callgrind_annotate's self cost per
// function, with V8's JIT code (callgrind sees only addresses there) named
// through the perf map the process wrote under --perf-basic-prof. What found
// that a 5 % difference between two hello-world servers was Node's own tick
// queue compiled two ways, not the engine's work (docs/benchmarks.md).
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { callgrindServer, type OpenLoad } from './callgrind.ts'

interface Region { start: number, end: number, name: string }

function perfMap (pid: number): Region[] {
  // V8 appends as it compiles, and code collected by the GC leaves its address to later code: the last entry wins.
  const byStart = new Map<number, Region>()
  for (const line of readFileSync(`/tmp/perf-${pid}.map`, 'utf8').split('\n')) {
    const [start, size, ...name] = line.split(' ')
    if (start === undefined || size === undefined || name.length === 0) continue
    const s = Number.parseInt(start, 16)
    byStart.set(s, { start: s, end: s + Number.parseInt(size, 16), name: name.join(' ') })
  }
  return [...byStart.values()].sort((a, b) => a.start - b.start)
}

function lookup (regions: Region[], address: number): string | undefined {
  let lo = 0
  let hi = regions.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const r = regions[mid]!
    if (address < r.start) hi = mid - 1
    else if (address >= r.end) lo = mid + 1
    else return r.name
  }
  return undefined
}

/** Code the perf map does not name: mostly the JS frames on the stack when the counters were zeroed, which carry what ran below them. */
export const UNNAMED = 'JIT code (not in the perf map)'

/**
 * Self instructions per function in a callgrind dump, JIT code named by the perf map of
 * `pid` (e.g. `JS:*'nextTick node:internal/process/task_queues:113:18`, `*` for TurboFan,
 * `+` Maglev, `^` Sparkplug, `~` the interpreter), and native code by its symbol.
 */
export function selfCosts (dump: string, pid: number): Map<string, number> {
  const text = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', dump], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })
  const regions = perfMap(pid)
  const costs = new Map<string, number>()
  for (const line of text.split('\n')) {
    const m = /^\s*([\d,]+)\s+\([\s\d.]+%\)\s+(.+)$/.exec(line)
    if (m === null || m[2]!.startsWith('PROGRAM TOTALS')) continue
    const address = /^\?\?\?:0x([0-9a-f]+)/.exec(m[2]!)
    const name = address === null ? m[2]!.replace(/ \[[^\]]*\]$/, '') : lookup(regions, Number.parseInt(address[1]!, 16)) ?? UNNAMED
    costs.set(name, (costs.get(name) ?? 0) + Number(m[1]!.replaceAll(',', '')))
  }
  return costs
}

/** The functions whose self cost differs most between two profiles, per unit of work. */
export function costDiff (a: Map<string, number>, b: Map<string, number>, per: number, top = 20): Array<{ name: string, a: number, b: number, diff: number }> {
  const names = new Set([...a.keys(), ...b.keys()])
  return [...names]
    .map((name) => ({ name, a: (a.get(name) ?? 0) / per, b: (b.get(name) ?? 0) / per, diff: ((a.get(name) ?? 0) - (b.get(name) ?? 0)) / per }))
    .sort((x, y) => Math.abs(y.diff) - Math.abs(x.diff))
    .slice(0, top)
}

/** One server's measured batch: instructions per unit by thread (main first) and, profiled, by function. */
export interface Profiled { threads: number[], costs?: Map<string, number>, per: number }

/**
 * A server under callgrind, as instructionsPer() counts it, with `env` set while it forks; with
 * `profile`, its measured batch dumped into that directory and costed by function (selfCosts).
 */
export async function profiledCount (script: URL | string, args: string[], open: OpenLoad, o: { warm: number, measured: number, env?: Record<string, string>, profile?: string }): Promise<Profiled> {
  const saved = { ...process.env }
  Object.assign(process.env, o.env ?? {})
  const server = callgrindServer(script, args, o.profile === undefined ? {} : { perfMap: true, keep: o.profile })
  process.env = saved
  const s = await server
  const load = open(s.port)
  try {
    await load.run(o.warm)
    s.zero()
    await load.run(o.measured)
    const threads = s.byThread().map((n) => n / o.measured)
    if (o.profile === undefined) return { threads, per: o.measured }
    const costs = selfCosts(s.dump(), s.pid)
    // The perf map joins its dump (callgrind_annotate reads neither without the other's names).
    copyFileSync(`/tmp/perf-${s.pid}.map`, join(o.profile, `perf-${s.pid}.map`))
    rmSync(`/tmp/perf-${s.pid}.map`, { force: true })
    return { threads, per: o.measured, costs }
  } finally {
    await load.close()
    await s.stop()
  }
}

/** A directory for profiled dumps and the perf maps' note, left for callgrind_annotate. */
export const profileDir = (): string => mkdtempSync(join(tmpdir(), 'lameduck-profile-'))

// The frames on the stack when the counters were zeroed carry everything below them: not a function's own cost.
const FRAMES = /below main|__libc_start|node::Start|NodeMainInstance::Run|SpinEventLoop|\?\?\?:main$|start_thread|clone|ld-linux|0x000000000001ab70/

/** A markdown table of the functions whose self cost differs most between two profiled batches, and lameduck's own JIT code. */
export function diffTable (aLabel: string, a: Profiled, bLabel: string, b: Profiled, top = 20): string {
  if (a.costs === undefined || b.costs === undefined) throw new Error('diffTable needs two profiled counts')
  const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')
  const strip = (c: Map<string, number>): Map<string, number> => new Map([...c].filter(([name]) => !FRAMES.test(name) && name !== UNNAMED))
  const own = (c: Map<string, number>, per: number): number => [...c].filter(([name]) => name.includes('/packages/')).reduce((sum, [, n]) => sum + n, 0) / per
  const rows = costDiff(strip(a.costs), strip(b.costs), a.per, top)
  return [
    `lameduck's own JIT code (self instructions per unit): ${aLabel} ${fmt(own(a.costs, a.per))}, ${bLabel} ${fmt(own(b.costs, b.per))}`,
    '',
    `| function (self instructions per unit) | ${aLabel} | ${bLabel} | difference |`,
    '|---|---:|---:|---:|',
    ...rows.map((d) => `| ${d.name.slice(0, 110)} | ${fmt(d.a)} | ${fmt(d.b)} | ${fmt(d.diff)} |`)
  ].join('\n')
}
