// Hello-world servers bare vs with attach() from @lameduck/node, in the same
// run: Express 5, plain node:http and node:https under autocannon (HTTP/1.1),
// node:http2 h2c and h2 (TLS) under h2load (or a node:http2 client loop without it). The server runs in a
// child process pinned to its own core; rounds alternate which side goes first
// so drift hits both alike. Two measures: requests/s, and the server's CPU time
// per request, which holds steady when other processes share the machine.
//   node --conditions=@lameduck/source packages/node/bench/overhead.ts [--rounds 5] [--seconds 3] [--servers express,node-http,https,h2c,h2]
import { fork, spawnSync, type ChildProcess, type StdioOptions } from 'node:child_process'
import { cpus } from 'node:os'
import { once } from 'node:events'
import { parseArgs } from 'node:util'
import { h2, hasH2load, http1, type Measure } from './load.ts'
import { serve, SERVERS, type Mode, type ServerKind } from './servers.ts'

// With taskset, the server and the load generator get a core each instead of
// fighting over the same one (the rest of the noise is the machine's).
export const pinned = process.platform === 'linux' && cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0

export interface Round { rps: number, cpuPerRequest: number }

/**
 * The server's process, started on its core: every thread of it there, V8's GC
 * helpers included (moving the process after it started moved only its main
 * thread, and the helpers ran beside the load generator, out of the measure).
 */
function startServer (kind: ServerKind, mode: Mode): ChildProcess {
  const args = ['--serve', `${kind}:${mode}`]
  const stdio: StdioOptions = ['ignore', 'inherit', 'inherit', 'ipc']
  if (!pinned) return fork(new URL(import.meta.url), args, { execArgv: process.execArgv, stdio })
  return fork(new URL(import.meta.url), args, { execPath: 'taskset', execArgv: ['-c', '1', process.execPath, ...process.execArgv], stdio })
}

async function round (kind: ServerKind, mode: Mode, seconds: number): Promise<Round> {
  const child = startServer(kind, mode)
  try {
    const [{ port }] = await once(child, 'message') as [{ port: number }]
    const cpu = async (): Promise<number> => {
      child.send('cpu')
      const [{ cpuMicros }] = await once(child, 'message') as [{ cpuMicros: number }]
      return cpuMicros
    }
    let used = 0
    const measure: Measure = async (run) => {
      const before = await cpu()
      const result = await run()
      used = await cpu() - before
      return result
    }
    const tls = kind === 'https' || kind === 'h2'
    const load = kind === 'h2c' || kind === 'h2'
      ? await h2(port, seconds, measure, pinned ? ['taskset', '-c', '0'] : [], tls)
      : await http1(port, seconds, measure, tls)
    return { rps: load.rps, cpuPerRequest: used / load.ok }
  } catch (err) {
    throw new Error(`${kind} ${mode}: ${(err as Error).message}`)
  } finally {
    child.disconnect()
    await once(child, 'exit')
  }
}

export const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]! }

const LABEL: Record<ServerKind, string> = { express: 'Express 5 (HTTP/1.1)', 'node-http': 'node:http (HTTP/1.1)', https: 'node:https (HTTP/1.1 over TLS)', h2c: 'node:http2 h2c', h2: 'node:http2 h2 (over TLS)' }

export interface EngineOverhead { ratios: Record<ServerKind, { cpu: number, rps: number }>, rounds: number, table: string, setup: string }

export async function rounds (kind: ServerKind, n: number, seconds: number, [without, withIt]: [Mode, Mode] = ['bare', 'attach']): Promise<{ bare: Round[], attached: Round[] }> {
  const bare: Round[] = []
  const attached: Round[] = []
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) {
      bare.push(await round(kind, without, seconds)); attached.push(await round(kind, withIt, seconds))
    } else {
      attached.push(await round(kind, withIt, seconds)); bare.push(await round(kind, without, seconds))
    }
  }
  return { bare, attached }
}

export async function benchEngineOverhead (n = 5, seconds = 3, kinds: readonly ServerKind[] = SERVERS): Promise<EngineOverhead> {
  if (pinned) spawnSync('taskset', ['-apc', '0', String(process.pid)])
  const rows: string[] = []
  const ratios = {} as EngineOverhead['ratios']
  try {
    for (const kind of kinds) {
      const { bare, attached } = await rounds(kind, n, seconds)
      // A round's two runs are neighbours in time, so their ratio cancels the machine's drift; the median
      // of those ratios is the result. CPU is bare ÷ attach() so that ≥ 0.98 reads like the req/s ratio.
      const cpu = median(bare.map((b, i) => b.cpuPerRequest / attached[i]!.cpuPerRequest))
      const rps = median(bare.map((b, i) => attached[i]!.rps / b.rps))
      ratios[kind] = { cpu, rps }
      const med = (xs: Round[], k: keyof Round): number => median(xs.map((x) => x[k]))
      const list = (xs: Round[]): string => xs.map((x) => Math.round(x.rps)).join(', ')
      rows.push(`| ${LABEL[kind]} | ${med(bare, 'cpuPerRequest').toFixed(1)} | ${med(attached, 'cpuPerRequest').toFixed(1)} | **${cpu.toFixed(3)}** | ` +
        `${Math.round(med(bare, 'rps'))} | ${Math.round(med(attached, 'rps'))} | **${rps.toFixed(3)}** | ${list(bare)} | ${list(attached)} |`)
    }
  } finally {
    if (pinned) spawnSync('taskset', ['-apc', `0-${cpus().length - 1}`, String(process.pid)])
  }
  const setup = [
    pinned ? 'Server and load generator pinned to separate cores (taskset, every thread of each).' : 'Not pinned (no taskset): expect more noise.',
    `HTTP/1.1 (plain and TLS): autocannon, 50 keep-alive connections. HTTP/2 (h2c and h2): ${hasH2load ? 'h2load (nghttp2-client)' : 'a node:http2 client loop (h2load not found: apt-get install nghttp2-client)'}, 10 sessions × 10 concurrent streams.`,
    `${n} rounds of ${seconds} s (after 1 s of warm-up) per side, alternating which side goes first.`,
    'Each ratio is the median of the per-round ratios (CPU: bare ÷ attach(); req/s: attach() ÷ bare); goal ≥ 0.98.'
  ].join(' ')
  const table = [
    '| hello world | server CPU µs/request, bare | with attach() | **CPU ratio** | req/s, bare | with attach() | **req/s ratio** | bare req/s per round | attach() req/s per round |',
    '|---|---:|---:|---:|---:|---:|---:|---|---|',
    ...rows
  ].join('\n')
  return { ratios, rounds: n, table, setup }
}

const { values } = parseArgs({ options: { serve: { type: 'string' }, rounds: { type: 'string', default: '5' }, seconds: { type: 'string', default: '3' }, servers: { type: 'string', default: SERVERS.join(',') } } })
if (values.serve !== undefined) {
  const [kind, mode] = values.serve.split(':') as [ServerKind, Mode]
  await serve(kind, mode)
} else if (import.meta.main) {
  const kinds = values.servers.split(',')
  const unknown = kinds.filter((k) => !(SERVERS as readonly string[]).includes(k))
  if (unknown.length > 0) throw new Error(`--servers: unknown ${unknown.join(', ')}; pick from ${SERVERS.join(', ')}`)
  const r = await benchEngineOverhead(Number(values.rounds), Number(values.seconds), kinds as ServerKind[])
  console.log(`${r.setup}\n\n${r.table}`)
}
