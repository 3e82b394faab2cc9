// CPU hogs for the stability checks: a busy loop in node, each pinned to a core
// with taskset when it exists. Timing-sensitive code fails first on a starved
// machine. 'all' (the default of the scripts) keeps every core busy. A hog ends
// itself once its parent is gone: a runner killed mid-run (Ctrl-C, `kill`) left
// its hogs spinning, and the next run measured twice the load it said.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { availableParallelism } from 'node:os'

export interface Hog { kill: () => void, cores: string[] }

/** `cores`: 'all', one core ('0') or a comma list ('0,1'). */
export function startHog (cores: string): Hog {
  const list = cores === 'all' ? Array.from({ length: availableParallelism() }, (_, i) => String(i)) : cores.split(',')
  const pinned = spawnSync('taskset', ['-V']).status === 0
  const children: ChildProcess[] = list.map((core) => {
    // Checks its parent every ~2^24 iterations (a few ms): an orphan is re-parented, so ppid changes.
    const busy = [process.execPath, '-e', `const p = ${process.pid}; for (let i = 0; ; i++) if ((i & 0xffffff) === 0 && process.ppid !== p) break`]
    const [cmd, ...args] = pinned ? ['taskset', '-c', core, ...busy] : busy
    return spawn(cmd!, args, { stdio: 'ignore' })
  })
  return { cores: list, kill: () => { for (const c of children) c.kill() } }
}
