// CPU hogs for the stability checks: `node -e 'for (;;) {}'`, each pinned to a
// core with taskset when it exists. Timing-sensitive code fails first on a
// starved machine. 'all' (the default of the scripts) keeps every core busy.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { availableParallelism } from 'node:os'

export interface Hog { kill: () => void, cores: string[] }

/** `cores`: 'all', one core ('0') or a comma list ('0,1'). */
export function startHog (cores: string): Hog {
  const list = cores === 'all' ? Array.from({ length: availableParallelism() }, (_, i) => String(i)) : cores.split(',')
  const pinned = spawnSync('taskset', ['-V']).status === 0
  const children: ChildProcess[] = list.map((core) => {
    const busy = [process.execPath, '-e', 'for (;;) {}']
    const [cmd, ...args] = pinned ? ['taskset', '-c', core, ...busy] : busy
    return spawn(cmd!, args, { stdio: 'ignore' })
  })
  return { cores: list, kill: () => { for (const c of children) c.kill() } }
}
