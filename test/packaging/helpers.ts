// Shared by the packaging tests: run a real command and keep what it printed.
import { spawnSync } from 'node:child_process'

export interface Ran { status: number, stdout: string, stderr: string }

export function run (command: string, args: string[], options: { cwd: string, env?: NodeJS.ProcessEnv }): Ran {
  const r = spawnSync(command, args, { cwd: options.cwd, env: options.env ?? cleanEnv(), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  if (r.error) throw r.error
  return { status: r.status ?? 128, stdout: r.stdout, stderr: r.stderr }
}

/** The environment without what an enclosing `npm test` sets for the repository (its prefix, workspace, lifecycle). */
export function cleanEnv (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_(package_|lifecycle_|command$|config_local_prefix$|config_workspaces?$|config_include_workspace_root$)/i.test(k)) continue
    env[k] = v
  }
  return { ...env, ...extra }
}

/** A registry address where nothing listens: a lookup that reaches it fails at once. */
export const DEAD_REGISTRY = 'http://127.0.0.1:9/'
