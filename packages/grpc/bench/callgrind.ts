// Instructions per call, bare vs under attachGrpc(), counted by valgrind's
// callgrind in the server process: unlike calls/s they do not move with the
// machine's load. Each side runs twice, with WARM and WARM + MEASURED calls; the
// difference of the two totals is what MEASURED steady calls cost (startup, JIT
// warm-up and exit cancel out; the GC the calls cause is included).
//   node --conditions=@lameduck/source packages/grpc/bench/callgrind.ts
import { fork, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { connect } from 'node:http2'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BenchMode } from './server.ts'

const WARM = 1_000
const MEASURED = 2_000
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

/** Total instructions (callgrind's Ir) of a server process that answered `n` calls. */
async function totalInstructions (mode: BenchMode, n: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-callgrind-'))
  const out = join(dir, 'callgrind.out')
  try {
    const child = fork(overhead, ['--serve', mode], {
      execPath: 'valgrind',
      execArgv: ['--tool=callgrind', '--quiet', `--callgrind-out-file=${out}`, process.execPath, ...process.execArgv],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc']
    })
    const exited = once(child, 'exit')
    const [{ port }] = await Promise.race([once(child, 'message'), exited.then(() => { throw new Error(`${mode}: the server exited under valgrind`) })]) as [{ port: number }]
    await calls(port, n)
    child.disconnect()
    await exited
    const totals = /^(?:totals|summary): (\d+)/m.exec(readFileSync(out, 'utf8'))
    if (totals === null) throw new Error(`${mode}: no totals in ${out}`)
    return Number(totals[1])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export interface CallgrindResult { bare: number, attached: number, ratio: number, table: string, setup: string }

export async function benchCallgrind (): Promise<CallgrindResult> {
  const perCall = async (mode: BenchMode): Promise<number> => {
    const [short, long] = [await totalInstructions(mode, WARM), await totalInstructions(mode, WARM + MEASURED)]
    return (long - short) / MEASURED
  }
  const bare = await perCall('bare')
  const attached = await perCall('attach')
  const ratio = bare / attached
  const table = [
    '| unary grpc-js | instructions per call, bare | with attachGrpc | added | **ratio (bare ÷ attachGrpc)** |',
    '|---|---:|---:|---:|---:|',
    `| 11-byte echo | ${Math.round(bare).toLocaleString('en-US')} | ${Math.round(attached).toLocaleString('en-US')} | ${Math.round(attached - bare).toLocaleString('en-US')} | **${ratio.toFixed(3)}** |`
  ].join('\n')
  const setup = `valgrind --tool=callgrind on the server process; per side, (Ir after ${(WARM + MEASURED).toLocaleString('en-US')} calls − Ir after ${WARM.toLocaleString('en-US')} calls) ÷ ${MEASURED.toLocaleString('en-US')}, 16 calls at a time on one connection: startup, JIT warm-up and exit cancel out, the garbage collection the calls cause stays in.`
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
