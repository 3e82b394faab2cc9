import { spawn } from 'node:child_process'
import { Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import type { Command, CommandContext } from '../src/command.ts'

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url))
export const BIN = fileURLToPath(new URL('../src/bin.ts', import.meta.url))
export const FIXTURES = fileURLToPath(new URL('./fixtures/doctor/', import.meta.url))

/** A writable that keeps what was written; `tty` makes it look like a terminal. */
export class Capture extends Writable {
  chunks: string[] = []
  isTTY: boolean
  columns: number
  constructor (tty = false, columns = 100) {
    super()
    this.isTTY = tty
    this.columns = columns
  }

  override _write (chunk: Buffer | string, _encoding: string, done: () => void): void {
    this.chunks.push(String(chunk))
    done()
  }

  get text (): string { return this.chunks.join('') }
}

export interface Ran { code: number, stdout: string, stderr: string, ms: number }

/** Runs a command in-process with captured streams. */
export async function runCommand (command: Command, argv: string[], options: { env?: NodeJS.ProcessEnv, tty?: boolean, signal?: AbortSignal, stdin?: NodeJS.ReadableStream } = {}): Promise<Ran & { out: Capture }> {
  const stdout = new Capture(options.tty === true)
  const stderr = new Capture()
  const ctx: CommandContext = { argv, stdout, stderr, env: options.env ?? {}, signal: options.signal ?? new AbortController().signal, stdin: options.stdin }
  const started = Date.now()
  const code = await command.run(ctx)
  return { code, stdout: stdout.text, stderr: stderr.text, ms: Date.now() - started, out: stdout }
}

/** Runs `node --conditions=@lameduck/source src/bin.ts ...args` as a real child process. */
export function runBin (args: string[], options: { env?: NodeJS.ProcessEnv, input?: string, onSpawn?: (pid: number) => void } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const child = spawn(process.execPath, ['--conditions=@lameduck/source', BIN, ...args], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe']
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d })
    child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d })
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : -1), stdout, stderr, ms: Date.now() - started }))
    if (options.input !== undefined) child.stdin.end(options.input)
    else child.stdin.end()
    options.onSpawn?.(child.pid!)
  })
}

// One app starter for the plugin's tests and the CLI's: a real Fastify app with
// @lameduck/fastify on 127.0.0.1, memory registry, 300 ms window, admin on port 0.
export { startApp, type Started } from '../../fastify/test/helpers.ts'

export { until } from '@lameduck/test-utils'
