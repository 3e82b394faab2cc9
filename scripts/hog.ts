// A CPU hog for the stability checks: `node -e 'for (;;) {}'`, pinned to one
// core with taskset when it exists. Timing-sensitive code fails first on a
// starved machine.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'

export function startHog (core: string): ChildProcess {
  const busy = [process.execPath, '-e', 'for (;;) {}']
  const pinned = spawnSync('taskset', ['-V']).status === 0
  const [cmd, ...args] = pinned ? ['taskset', '-c', core, ...busy] : busy
  return spawn(cmd!, args, { stdio: 'ignore' })
}
