// A provider in a child process (fixtures/fault-app.ts), for the signal tests:
// its event and log lines, its exit, and waits on them.
import { fork, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import type { TestContext } from 'node:test'
import { until } from '../helpers.ts'

export interface Line { t: number, event?: string, to?: string, msg?: string, url?: string, admin?: string, id?: string, held?: number, level?: number, [k: string]: unknown }

export interface Child {
  child: ChildProcess
  lines: Line[]
  exited: Promise<{ code: number | null, at: number }>
  /** Resolves with the app and admin URLs once listening. */
  listening(): Promise<{ url: string, admin: string }>
  events(name: string): Line[]
  states(): string[]
  logged(re: RegExp): Line | undefined
  waitEvent(name: string, timeoutMs?: number): Promise<Line>
  waitState(state: string, timeoutMs?: number): Promise<void>
  kill(signal: NodeJS.Signals): number
}

export function spawnApp (t: TestContext, options: Record<string, unknown>): Child {
  const child = fork(new URL('./fixtures/fault-app.ts', import.meta.url), [JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
  const lines: Line[] = []
  createInterface({ input: child.stdout! }).on('line', (l) => { try { lines.push(JSON.parse(l) as Line) } catch {} })
  let done = false
  let exitAt = 0
  child.once('exit', () => { exitAt = Date.now() })
  // 'close' comes after 'exit' once stdout is drained: every line is in by then.
  const exited = new Promise<{ code: number | null, at: number }>((resolve) => child.once('close', (code) => { done = true; resolve({ code, at: exitAt || Date.now() }) }))
  t.after(async () => { if (!done) { child.kill('SIGKILL'); await exited } })
  const c: Child = {
    child,
    lines,
    exited,
    async listening () {
      const l = await c.waitEvent('listening')
      return { url: l.url!, admin: l.admin! }
    },
    events: (name) => lines.filter((l) => l.event === name),
    states: () => c.events('state').map((l) => l.to!),
    logged: (re) => lines.find((l) => typeof l.msg === 'string' && re.test(l.msg)),
    async waitEvent (name, timeoutMs = 10_000) {
      return (await until(() => lines.find((l) => l.event === name), `the child's '${name}' event`, { timeoutMs }))!
    },
    async waitState (state, timeoutMs = 10_000) {
      await until(() => c.states().includes(state), `the child to reach '${state}' (states so far: ${c.states().join(', ')})`, { timeoutMs })
    },
    kill (signal) {
      child.kill(signal)
      return Date.now()
    }
  }
  return c
}
