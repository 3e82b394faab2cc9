// A unary grpc-js server bare vs under attachGrpc(), in the same run: the server
// in a child process pinned to its own core, the load from a node:http2 client
// that speaks gRPC's wire format itself (5-byte framed messages, trailers read for
// grpc-status), so the load generator costs little next to the server. Rounds
// alternate which side goes first; each ratio is the median of the per-round ratios.
// Measures: calls/s; the server's CPU time per call; the heap the server allocates
// per call (V8's sampling heap profiler, garbage included).
//   node --conditions=@lameduck/source packages/grpc/bench/overhead.ts [--rounds 5] [--seconds 3]
import { fork, spawnSync, type ChildProcess, type StdioOptions } from 'node:child_process'
import { once } from 'node:events'
import { connect, type ClientHttp2Session } from 'node:http2'
import { cpus } from 'node:os'
import { parseArgs } from 'node:util'
import { serveBench, type BenchMode } from './server.ts'

const pinned = process.platform === 'linux' && cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0
const SESSIONS = 8
const STREAMS = 16
/** Calls under the sampling heap profiler: a few hundred samples at one per 4 KiB. */
const HEAP_CALLS = 20_000
/** The request: a 5-byte gRPC frame header and an 11-byte message. */
const FRAME = Buffer.concat([Buffer.from([0, 0, 0, 0, 11]), Buffer.from('hello world')])

interface Round { cps: number, cpuPerCall: number, bytesPerCall: number }

function startServer (mode: BenchMode): ChildProcess {
  const args = ['--serve', mode]
  const stdio: StdioOptions = ['ignore', 'inherit', 'inherit', 'ipc']
  if (!pinned) return fork(new URL(import.meta.url), args, { execArgv: process.execArgv, stdio })
  return fork(new URL(import.meta.url), args, { execPath: 'taskset', execArgv: ['-c', '1', process.execPath, ...process.execArgv], stdio })
}

async function ask<T> (child: ChildProcess, message: string): Promise<T> {
  child.send(message)
  const [answer] = await once(child, 'message') as [T]
  return answer
}

/** One call on `session`; resolves true when grpc-status is 0. */
function unary (session: ClientHttp2Session): Promise<boolean> {
  return new Promise((resolve) => {
    const stream = session.request({ ':method': 'POST', ':path': '/bench.Echo/Echo', 'content-type': 'application/grpc', te: 'trailers' })
    let ok = false
    stream.on('trailers', (t) => { ok = t['grpc-status'] === '0' })
    stream.on('response', (h) => { if (h['grpc-status'] !== undefined) ok = h['grpc-status'] === '0' })
    stream.on('data', () => {})
    stream.on('close', () => resolve(ok))
    stream.on('error', () => resolve(false))
    stream.end(FRAME)
  })
}

/** Calls from SESSIONS × STREAMS loops until `until()` says stop; returns the successful count. */
async function drive (port: number, until: (calls: number) => boolean): Promise<{ ok: number, failed: number }> {
  const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => new Promise<ClientHttp2Session>((resolve, reject) => {
    const s = connect(`http://127.0.0.1:${port}`)
    s.once('connect', () => resolve(s))
    s.once('error', reject)
  })))
  const counts = { ok: 0, failed: 0 }
  await Promise.all(sessions.flatMap((s) => Array.from({ length: STREAMS }, async () => {
    while (!until(counts.ok + counts.failed)) {
      if (await unary(s)) counts.ok++
      else counts.failed++
    }
  })))
  for (const s of sessions) s.close()
  return counts
}

async function round (mode: BenchMode, seconds: number): Promise<Round> {
  const child = startServer(mode)
  try {
    const exited = once(child, 'exit').then(([code]) => { throw new Error(`${mode}: the server exited with ${code}`) })
    const [{ port }] = await Promise.race([once(child, 'message'), exited]) as [{ port: number }]
    const warm = Date.now() + 1_000
    await drive(port, () => Date.now() >= warm)
    const before = await ask<{ cpuMicros: number }>(child, 'cpu')
    const started = process.hrtime.bigint()
    const end = Date.now() + seconds * 1_000
    const { ok, failed } = await drive(port, () => Date.now() >= end)
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9
    const after = await ask<{ cpuMicros: number }>(child, 'cpu')
    if (failed > 0) throw new Error(`${mode}: ${failed} calls failed`)
    await ask(child, 'heap-start')
    await drive(port, (calls) => calls >= HEAP_CALLS)
    const { bytes } = await ask<{ bytes: number }>(child, 'heap-stop')
    return { cps: ok / elapsed, cpuPerCall: (after.cpuMicros - before.cpuMicros) / ok, bytesPerCall: bytes / HEAP_CALLS }
  } finally {
    child.disconnect()
    await once(child, 'exit')
  }
}

const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]! }

export interface GrpcOverhead { cpsRatio: number, cpuRatio: number, bare: Round[], attached: Round[], table: string, setup: string }

export async function benchGrpcOverhead (rounds = 5, seconds = 3): Promise<GrpcOverhead> {
  if (pinned) spawnSync('taskset', ['-apc', '0', String(process.pid)])
  const bare: Round[] = []
  const attached: Round[] = []
  try {
    for (let i = 0; i < rounds; i++) {
      if (i % 2 === 0) { bare.push(await round('bare', seconds)); attached.push(await round('attach', seconds)) } else { attached.push(await round('attach', seconds)); bare.push(await round('bare', seconds)) }
    }
  } finally {
    if (pinned) spawnSync('taskset', ['-apc', `0-${cpus().length - 1}`, String(process.pid)])
  }
  const cpsRatio = median(bare.map((b, i) => attached[i]!.cps / b.cps))
  const cpuRatio = median(bare.map((b, i) => b.cpuPerCall / attached[i]!.cpuPerCall))
  const med = (xs: Round[], k: keyof Round): number => median(xs.map((x) => x[k]))
  const list = (xs: Round[]): string => xs.map((x) => Math.round(x.cps)).join(', ')
  const table = [
    '| unary grpc-js | calls/s, bare | with attachGrpc | **calls/s ratio** | server CPU µs/call, bare | with attachGrpc | **CPU ratio** | heap B/call, bare | with attachGrpc | bare calls/s per round | attachGrpc calls/s per round |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|',
    `| 11-byte echo | ${Math.round(med(bare, 'cps'))} | ${Math.round(med(attached, 'cps'))} | **${cpsRatio.toFixed(3)}** | ${med(bare, 'cpuPerCall').toFixed(1)} | ${med(attached, 'cpuPerCall').toFixed(1)} | **${cpuRatio.toFixed(3)}** | ${Math.round(med(bare, 'bytesPerCall'))} | ${Math.round(med(attached, 'bytesPerCall'))} | ${list(bare)} | ${list(attached)} |`
  ].join('\n')
  const setup = [
    pinned ? 'Server and load generator pinned to separate cores (taskset).' : 'Not pinned (no taskset): expect more noise.',
    `Load: a node:http2 client speaking gRPC's framing, ${SESSIONS} connections × ${STREAMS} concurrent unary calls.`,
    `${rounds} rounds of ${seconds} s (after 1 s of warm-up) per side, each in a fresh server process, alternating which side goes first.`,
    'Each ratio is the median of the per-round ratios (calls/s: attachGrpc ÷ bare; CPU: bare ÷ attachGrpc); goal ≥ 0.98.',
    `Heap per call: V8's sampling heap profiler in the server over ${HEAP_CALLS.toLocaleString('en-US')} more calls, garbage included.`
  ].join(' ')
  return { cpsRatio, cpuRatio, bare, attached, table, setup }
}

const { values } = parseArgs({ options: { serve: { type: 'string' }, rounds: { type: 'string', default: '5' }, seconds: { type: 'string', default: '3' } } })
if (values.serve !== undefined) {
  await serveBench(values.serve as BenchMode)
} else if (import.meta.main) {
  const r = await benchGrpcOverhead(Number(values.rounds), Number(values.seconds))
  console.log(`${r.setup}\n\n${r.table}`)
}
