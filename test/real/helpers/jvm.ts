// Starts a Spring Boot jar of test/real as a child process in its own process group, on a port
// the JVM binds itself (server.port=0), and stops the whole group by its id.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const REAL_DIR = fileURLToPath(new URL('..', import.meta.url))

/** Small heaps and the C1 compiler only: a test JVM starts faster on a busy 2-core machine. */
const JVM_FLAGS = ['-Xmx256m', '-Xss512k', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xshare:auto']

export interface Jvm {
  name: string
  pid: number
  port: number
  url: string
  /** stdout lines so far (JSON lines of the consumer, log lines of the server). */
  lines: string[]
  /** Called with every new stdout line. */
  onLine: (fn: (line: string) => void) => void
  /** Last lines of stdout and stderr, for failure messages. */
  tail: (n?: number) => string
  stop: () => Promise<void>
}

const running = new Set<ChildProcess>()
// A test that throws still must not leave a JVM behind: kill every group on exit, and on the
// signals a test runner sends a file it gives up on (then die of that signal as before).
const killAll = (): void => { for (const c of running) killGroup(c, 'SIGKILL') }
process.once('exit', killAll)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAll()
    process.kill(process.pid, signal)
  })
}

function killGroup (child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  try { process.kill(-child.pid, signal) } catch { /* already gone */ }
}

export function jarPath (module: string): string {
  const jar = join(REAL_DIR, module, 'target', `${module}.jar`)
  if (!existsSync(jar)) throw new Error(`${jar} is missing: run test/real/build.sh (npm run test:real does)`)
  return jar
}

/** Runs `java -jar <module>.jar <args>` and resolves once it wrote its bound port. */
export async function startJar (module: string, args: string[], name = module, readyTimeoutMs = 120_000): Promise<Jvm> {
  const dir = mkdtempSync(join(tmpdir(), `lameduck-${module}-`))
  const portFile = join(dir, 'port')
  const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java'
  // stdin stays open as a lifeline: the JVM halts when it closes (lab.exit-on-stdin-eof), so even a
  // test process killed with SIGKILL leaves no JVM behind.
  const child = spawn(java, [...JVM_FLAGS, '-jar', jarPath(module), `--lab.port-file=${portFile}`, '--lab.exit-on-stdin-eof=true', ...args], {
    cwd: dir, detached: true, stdio: ['pipe', 'pipe', 'pipe']
  })
  running.add(child)
  const lines: string[] = []
  const errLines: string[] = []
  const listeners: Array<(line: string) => void> = []
  const split = (into: string[], notify: boolean) => {
    let rest = ''
    return (chunk: Buffer): void => {
      const parts = (rest + chunk.toString('utf8')).split('\n')
      rest = parts.pop()!
      for (const line of parts) {
        into.push(line)
        if (notify) for (const fn of listeners) fn(line)
      }
    }
  }
  child.stdout!.on('data', split(lines, true))
  child.stderr!.on('data', split(errLines, false))
  const exited = new Promise<void>((resolve) => child.once('exit', () => { running.delete(child); resolve() }))
  const tail = (n = 30): string => [...lines.slice(-n), ...errLines.slice(-n)].join('\n')
  const stop = async (): Promise<void> => {
    killGroup(child, 'SIGTERM')
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 10_000)
    await exited
    clearTimeout(timer)
    rmSync(dir, { recursive: true, force: true })
  }
  const deadline = Date.now() + readyTimeoutMs
  while (!existsSync(portFile)) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop()
      throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before listening:\n${tail()}`)
    }
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`${name} did not listen within ${readyTimeoutMs} ms:\n${tail()}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const port = Number(readFileSync(portFile, 'utf8'))
  return { name, pid: child.pid!, port, url: `http://127.0.0.1:${port}`, lines, onLine: (fn) => listeners.push(fn), tail, stop }
}
