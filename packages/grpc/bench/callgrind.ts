// Instructions per call, bare vs under attachGrpc(), counted by valgrind's
// callgrind in the server process: unlike calls/s they do not move with the
// machine's load. Each side is one server process: WARM calls, then its counters
// are zeroed (callgrind_control -z), then MEASURED calls, then its counters read
// (callgrind_control -e, every thread: V8's GC helpers included). Startup and JIT
// warm-up stay out; the GC the calls cause stays in.
//   node --conditions=@lameduck/source packages/grpc/bench/callgrind.ts
import { execFileSync, fork, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:http2'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BenchMode } from './server.ts'

const WARM = 2_000
const MEASURED = 4_000
const FRAME = Buffer.concat([Buffer.from([0, 0, 0, 0, 11]), Buffer.from('hello world')])
const overhead = new URL('./overhead.ts', import.meta.url)

export const hasValgrind = (): boolean => spawnSync('valgrind', ['--version']).status === 0

/** `n` unary calls, 16 at a time on one connection. */
async function calls (port: number, n: number): Promise<void> {
  const session = connect(`http://127.0.0.1:${port}`)
  let left = n
  const one = (): Promise<void> => new Promise((resolve, reject) => {
    const stream = session.request({ ':method': 'POST', ':path': '/bench.Echo/Echo', 'content-type': 'application/grpc', te: 'trailers' })
    let status: unknown
    stream.on('trailers', (t) => { status = t['grpc-status'] })
    stream.on('data', () => {})
    stream.on('close', () => status === '0' ? resolve() : reject(new Error(`grpc-status ${String(status)}`)))
    stream.end(FRAME)
  })
  await Promise.all(Array.from({ length: 16 }, async () => { while (left-- > 0) await one() }))
  session.close()
}

/** Instructions (callgrind's Ir, all threads) since the counters were last zeroed, read from the running process. */
function counters (pid: number, zero = false): number {
  const out = execFileSync('callgrind_control', zero ? ['-z', String(pid)] : ['-e', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  if (zero) return 0
  const threads = [...out.matchAll(/^\s*Th \d+\s+([\d,]+)/gm)].map((m) => Number(m[1]!.replaceAll(',', '')))
  if (threads.length === 0) throw new Error(`no counters from callgrind_control -e ${pid}: ${out}`)
  return threads.reduce((a, b) => a + b, 0)
}

/** Instructions per call of a server under callgrind: WARM calls, counters zeroed, MEASURED calls, counters read. */
async function perCall (mode: BenchMode): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-callgrind-'))
  try {
    const child = fork(overhead, ['--serve', mode], {
      execPath: 'valgrind',
      execArgv: ['--tool=callgrind', '--quiet', `--callgrind-out-file=${join(dir, 'callgrind.out')}`, process.execPath, ...process.execArgv],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc']
    })
    const exited = once(child, 'exit')
    const [{ port }] = await Promise.race([once(child, 'message'), exited.then(() => { throw new Error(`${mode}: the server exited under valgrind`) })]) as [{ port: number }]
    await calls(port, WARM)
    counters(child.pid!, true)
    await calls(port, MEASURED)
    const total = counters(child.pid!)
    child.disconnect()
    await exited
    return total / MEASURED
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export interface CallgrindResult { bare: number, attached: number, ratio: number, table: string, setup: string }

export async function benchCallgrind (): Promise<CallgrindResult> {
  // The two sides at once: under valgrind most of a run is node starting.
  const [bare, attached] = await Promise.all([perCall('bare'), perCall('attach')])
  const ratio = bare / attached
  const table = [
    '| unary grpc-js | instructions per call, bare | with attachGrpc | added | **ratio (bare ÷ attachGrpc)** |',
    '|---|---:|---:|---:|---:|',
    `| 11-byte echo | ${Math.round(bare).toLocaleString('en-US')} | ${Math.round(attached).toLocaleString('en-US')} | ${Math.round(attached - bare).toLocaleString('en-US')} | **${ratio.toFixed(3)}** |`
  ].join('\n')
  const setup = `valgrind --tool=callgrind on the server process; per side, ${WARM.toLocaleString('en-US')} calls, counters zeroed (callgrind_control -z), ${MEASURED.toLocaleString('en-US')} calls, counters read (every thread), ÷ ${MEASURED.toLocaleString('en-US')}; 16 calls at a time on one connection. Startup and JIT warm-up stay out, the garbage collection the calls cause stays in.`
  return { bare, attached, ratio, table, setup }
}

if (import.meta.main) {
  if (!hasValgrind()) {
    console.log('valgrind not found (apt-get install valgrind)')
  } else {
    const r = await benchCallgrind()
    console.log(`${r.setup}\n\n${r.table}`)
  }
}
