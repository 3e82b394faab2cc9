// Instructions instead of time, for overheads inside the machine's noise: a server
// process run under valgrind's callgrind, its counters zeroed and read from outside
// (callgrind_control) around a measured batch. Unlike req/s these do not move with
// the load of a shared machine. Startup and JIT warm-up stay out of the count; the
// garbage collection the measured requests cause stays in (every thread is summed).
//
// V8 sizes the young generation and schedules minor GCs from timing: how fast it scavenged,
// when a task got to run. Under valgrind's slowdown that made one side's batch hold 4
// scavenges and the other's 30 for the same code. So every server runs with the GC schedule
// fixed (the same flags on both sides): a scavenge then comes after a fixed amount of
// allocation, and a count repeats to within a few instructions per request.
//
// The warm-up and the measured batch run on the same client connections. A batch that opened
// its own met new socket and session objects the code had not seen yet: V8 deoptimized Node's
// stream constructors ("wrong map") and compiled them again inside the count, 40,000 to 50,000
// instructions per gRPC call of JIT work that differed between two processes by thousands.
import { execFileSync, fork, spawnSync, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

export const hasValgrind = (): boolean => spawnSync('valgrind', ['--version']).status === 0

/** V8 flags for a GC schedule that follows allocation, not time (see above). */
export const STEADY_GC_FLAGS = ['--predictable-gc-schedule', '--no-minor-gc-task'] as const

/** A server under callgrind: its port (sent over IPC as `{ port }`), and its counters. */
export interface CallgrindServer {
  port: number
  /** Zeroes the counters (before the measured batch). */
  zero(): void
  /** Instructions (Ir, all threads) since the last zero. */
  instructions(): number
  /** The same, per thread (the main thread first, then V8's and libuv's helpers). */
  byThread(): number[]
  /** Writes the counters since the last zero to a file (callgrind_control -d) and returns its path. */
  dump(): string
  /** The server's pid: with `perfMap`, V8 names its JIT code in /tmp/perf-<pid>.map. */
  pid: number
  stop(): Promise<void>
}

function control (pid: number, args: string[]): string {
  return execFileSync('callgrind_control', [...args, String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
}

/**
 * Forks `script args` under callgrind (with this process's execArgv) and waits for its `{ port }` message.
 * `perfMap`: V8 writes /tmp/perf-<pid>.map, which names the JIT code callgrind sees only as addresses
 * (see profile.ts); `keep`: a directory for the dumps, left in place.
 */
export async function callgrindServer (script: URL | string, args: string[], options: { perfMap?: boolean, keep?: string } = {}): Promise<CallgrindServer> {
  const dir = options.keep ?? mkdtempSync(join(tmpdir(), 'lameduck-callgrind-'))
  const out = join(dir, 'callgrind.%p.out')
  // cwd: the dumps' directory, where V8 also writes the isolate log --perf-basic-prof opens (not the repo).
  const child: ChildProcess = fork(typeof script === 'string' ? resolve(script) : script, args, {
    cwd: dir,
    execPath: 'valgrind',
    execArgv: ['--tool=callgrind', '--quiet', `--callgrind-out-file=${out}`, process.execPath, ...STEADY_GC_FLAGS, ...(options.perfMap === true ? ['--perf-basic-prof'] : []), ...process.execArgv],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  const exited = once(child, 'exit')
  const threads = (): number[] => {
    const out = control(child.pid!, ['-e'])
    const counts = [...out.matchAll(/^\s*Th \d+\s+([\d,]+)/gm)].map((m) => Number(m[1]!.replaceAll(',', '')))
    if (counts.length === 0) throw new Error(`no counters from callgrind_control -e ${child.pid}: ${out}`)
    return counts
  }
  try {
    const [{ port }] = await Promise.race([once(child, 'message'), exited.then(() => { throw new Error(`${args.join(' ')}: the server exited under valgrind`) })]) as [{ port: number }]
    return {
      port,
      zero: () => { control(child.pid!, ['-z']) },
      pid: child.pid!,
      instructions: () => threads().reduce((a, b) => a + b, 0),
      byThread: threads,
      dump: () => {
        const before = new Set(readdirSync(dir))
        control(child.pid!, ['-d'])
        const file = readdirSync(dir).find((f) => !before.has(f) && f.startsWith(`callgrind.${child.pid}.out`))
        if (file === undefined) throw new Error(`callgrind_control -d ${child.pid} wrote no file in ${dir}`)
        return join(dir, file)
      },
      stop: async () => {
        if (child.connected) child.disconnect()
        await exited
        if (options.keep === undefined) rmSync(dir, { recursive: true, force: true })
      }
    }
  } catch (err) {
    child.kill('SIGKILL')
    if (options.keep === undefined) rmSync(dir, { recursive: true, force: true })
    throw err
  }
}

/** A client on a server under callgrind: opened once, it carries the warm-up and the measured batch on the same connections. */
export interface Load {
  /** Sends `n` units of work (requests, calls) and waits for every answer; rejects on a failed one. */
  run(n: number): Promise<void>
  close(): void | Promise<void>
}

/** Opens the client on the server's port. */
export type OpenLoad = (port: number) => Load

/**
 * Instructions per unit of work of a server under callgrind: one client opened,
 * `warm` units, counters zeroed, `measured` units, counters read (every thread) ÷ measured.
 */
export async function instructionsPer (script: URL | string, args: string[], open: OpenLoad, counts: { warm: number, measured: number }): Promise<number> {
  const server = await callgrindServer(script, args)
  const load = open(server.port)
  try {
    await load.run(counts.warm)
    server.zero()
    await load.run(counts.measured)
    return server.instructions() / counts.measured
  } finally {
    await load.close()
    await server.stop()
  }
}

/** A side of a paired count: its count per round and their median. */
export interface SideCounts { rounds: number[], median: number }

/**
 * Both sides' counts, `rounds` times, each round a fresh process per side (both at once:
 * under valgrind most of a run is node starting), and each side's median. Where a major GC
 * falls moves one process's count by thousands of instructions per unit: one run of each
 * side is not a comparison.
 */
export async function pairedCounts (rounds: number, bare: () => Promise<number>, attached: () => Promise<number>): Promise<{ bare: SideCounts, attached: SideCounts, ratio: number }> {
  const b: number[] = []
  const a: number[] = []
  for (let i = 0; i < rounds; i++) {
    const [x, y] = await Promise.all([bare(), attached()])
    b.push(x)
    a.push(y)
  }
  const median = (xs: number[]): number => { const s = [...xs].sort((p, q) => p - q); return s[Math.floor(s.length / 2)]! }
  const out = { bare: { rounds: b, median: median(b) }, attached: { rounds: a, median: median(a) } }
  return { ...out, ratio: out.bare.median / out.attached.median }
}
