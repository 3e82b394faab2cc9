// What the framework examples' smoke tests share: start an example as the child
// process `npm start` runs, send steady traffic to it, and take it offline the
// way a Kubernetes preStop does, with `lameduck prestop` from @lameduck/cli.
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { Agent, request } from 'undici'
import { until } from '@lameduck/test-utils'
import { startTraffic, type TrafficStats } from './traffic.ts'

export interface Example {
  /** The app's base URL, e.g. http://127.0.0.1:40123. */
  url: string
  port: number
  /** The lameduck admin listener's URL. */
  admin: string
  child: ChildProcess
  /** Every line the child printed (stderr prefixed). */
  output: string[]
}

export { until }

/** Runs `node --conditions=@lameduck/source <entry>`; resolves once it printed `listening on URL, admin URL`. */
export async function startExample (entry: string, env: Record<string, string>): Promise<Example> {
  const child = spawn(process.execPath, ['--conditions=@lameduck/source', entry], {
    env: { ...process.env, PORT: '0', ADMIN_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const output: string[] = []
  createInterface({ input: child.stderr! }).on('line', (line) => output.push(`stderr: ${line}`))
  const m = await new Promise<RegExpMatchArray>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output.push(line)
      const found = line.match(/listening on (http:\/\/\S+), admin (http:\/\/\S+)/)
      if (found) resolve(found)
    })
    child.once('exit', (code) => reject(new Error(`${entry} exited with ${code} before listening:\n${output.join('\n')}`)))
  })
  return { url: m[1]!, port: Number(new URL(m[1]!).port), admin: m[2]!, child, output }
}

/** Sends a signal and resolves with the exit code. */
export async function stopExample (example: Example, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (example.child.exitCode !== null || example.child.signalCode !== null) return example.child.exitCode
  const exited = once(example.child, 'exit')
  example.child.kill(signal)
  const [code] = await exited as [number | null]
  return code
}

const require = createRequire(import.meta.url)
const cliBin = join(dirname(require.resolve('@lameduck/cli/package.json')), 'src', 'bin.ts')

/** `lameduck prestop --admin URL` from the CLI's sources, as a container's preStop runs it. */
export async function prestop (admin: string): Promise<{ code: number | null, output: string }> {
  const child = spawn(process.execPath, ['--conditions=@lameduck/source', cliBin, 'prestop', '--admin', admin], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (d: Buffer) => { output += d })
  child.stderr.on('data', (d: Buffer) => { output += d })
  const [code] = await once(child, 'exit') as [number | null]
  return { code, output }
}

/** One GET on the app, as a client sees it: the status and the parsed JSON body (the text when it is not JSON). */
export async function answer (example: Example, path = '/hello'): Promise<{ status: number, body: unknown }> {
  const res = await request(`${example.url}${path}`)
  const text = await res.body.text()
  let body: unknown = text
  try { body = JSON.parse(text) } catch {}
  return { status: res.statusCode, body }
}

/** The traffic's check of each answer: the examples' `GET /hello` says `{ hello: 'world', ... }`. */
export function helloWorld (text: string): string | undefined {
  try {
    if ((JSON.parse(text) as { hello?: unknown }).hello === 'world') return undefined
  } catch {}
  return `a body without hello: 'world': ${text.slice(0, 80)}`
}

export interface DrainResult {
  prestop: { code: number | null, output: string }
  stats: TrafficStats
  /** The lines traffic printed, e.g. when the app first answered with `x-lameduck-state`. */
  lines: string[]
}

/**
 * Traffic on keep-alive connections, one request every 5 ms to `path` (a 2xx
 * whose body says hello: 'world', or it counts as failed); once some were answered, `lameduck prestop`; when it returns, the traffic stops
 * and every answer is in.
 */
export async function drainUnderTraffic (example: Example, path = '/hello'): Promise<DrainResult> {
  const dispatcher = new Agent({ keepAliveTimeout: 30_000 })
  const lines: string[] = []
  const traffic = startTraffic({ url: `${example.url}${path}`, dispatcher, intervalMs: 5, summaryMs: 0, print: (l) => lines.push(l), clock: () => '', checkBody: helloWorld })
  try {
    await until(() => traffic.stats.ok >= 20 || traffic.stats.failed > 0, 'the app to answer traffic')
    return { prestop: await prestop(example.admin), stats: await traffic.stop(), lines }
  } finally {
    await traffic.stop()
    await dispatcher.close()
  }
}
