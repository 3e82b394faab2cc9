// Instructions per call, bare vs under attachGrpc(), counted by valgrind's
// callgrind in the server process: unlike calls/s they do not move with the
// machine's load. Each side is one server process: WARM calls, then its counters
// are zeroed (callgrind_control -z), then MEASURED calls, then its counters read
// (callgrind_control -e, every thread: V8's GC helpers included). Startup and JIT
// warm-up stay out; the GC the calls cause stays in.
//   node --conditions=@lameduck/source packages/grpc/bench/callgrind.ts [--profile]
// --profile: one round, both sides' measured calls costed by function (the perf map names V8's JIT code).
import { connect } from 'node:http2'
import { diffTable, hasValgrind, instructionsPer, pairedCounts, profileDir, profiledCount, STEADY_GC_FLAGS, type OpenLoad } from '@lameduck/test-utils'
import type { BenchMode } from './server.ts'

export { hasValgrind }

// As in @lameduck/node's callgrind bench: V8 re-tiers long after start-up, so the count starts late.
const WARM = Number(process.env.BENCH_CALLGRIND_WARM ?? 30_000)
// The GC's cost per call comes in cycles of about 12,000 calls here: consecutive batches of 6,000
// in one process alternate high and low by ~13,000 instructions per call, on both sides, so a
// short batch counts whichever phase it starts in (0.963 to 0.986 for the same code). The batch
// covers two cycles, and each side still runs ROUNDS times, a fresh process each, medians compared.
const MEASURED = Number(process.env.BENCH_CALLGRIND_CALLS ?? 24_000)
const ROUNDS = Number(process.env.BENCH_CALLGRIND_ROUNDS ?? 3)
const FRAME = Buffer.concat([Buffer.from([0, 0, 0, 0, 11]), Buffer.from('hello world')])
const overhead = new URL('./overhead.ts', import.meta.url)

/** Unary calls, 16 at a time on one connection: the warm-up's connection carries the measured calls too. */
export const unaryCalls: OpenLoad = (port) => {
  const session = connect(`http://127.0.0.1:${port}`)
  const one = (): Promise<void> => new Promise((resolve, reject) => {
    const stream = session.request({ ':method': 'POST', ':path': '/bench.Echo/Echo', 'content-type': 'application/grpc', te: 'trailers' })
    let status: unknown
    stream.on('trailers', (t) => { status = t['grpc-status'] })
    stream.on('data', () => {})
    stream.on('close', () => status === '0' ? resolve() : reject(new Error(`grpc-status ${String(status)}`)))
    stream.end(FRAME)
  })
  return {
    run: async (n) => {
      let left = n
      await Promise.all(Array.from({ length: 16 }, async () => { while (left-- > 0) await one() }))
    },
    close: () => { session.close() }
  }
}

/** Instructions per call of a server under callgrind: WARM calls, counters zeroed, MEASURED calls, counters read. */
function perCall (mode: BenchMode): Promise<number> {
  return instructionsPer(overhead, ['--serve', mode], unaryCalls, { warm: WARM, measured: MEASURED })
}

export interface CallgrindResult { bare: number, attached: number, ratio: number, rounds: Array<{ bare: number, attached: number }>, table: string, setup: string }

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')

export async function benchCallgrind (): Promise<CallgrindResult> {
  const counts = await pairedCounts(ROUNDS, () => perCall('bare'), () => perCall('attach'))
  const bare = counts.bare.median
  const attached = counts.attached.median
  const rounds = counts.bare.rounds.map((b, i) => ({ bare: b, attached: counts.attached.rounds[i]! }))
  const ratio = bare / attached
  const table = [
    '| unary grpc-js | instructions per call, bare | with attachGrpc | added | **ratio (bare ÷ attachGrpc)** | rounds (bare / attachGrpc) |',
    '|---|---:|---:|---:|---:|---|',
    `| 11-byte echo | ${fmt(bare)} | ${fmt(attached)} | ${fmt(attached - bare)} | **${ratio.toFixed(3)}** | ${rounds.map((r) => `${fmt(r.bare)} / ${fmt(r.attached)}`).join('; ')} |`
  ].join('\n')
  const setup = `valgrind --tool=callgrind on the server process, V8's GC schedule fixed (${STEADY_GC_FLAGS.join(' ')}, both sides); per side and round a fresh process: ${fmt(WARM)} calls, counters zeroed (callgrind_control -z), ${fmt(MEASURED)} calls on the same connection, counters read (every thread), ÷ ${fmt(MEASURED)}; 16 calls at a time on one connection; the median of ${ROUNDS} rounds per side. Startup and JIT warm-up stay out, the garbage collection the calls cause stays in.`
  return { bare, attached, ratio, rounds, table, setup }
}

if (import.meta.main) {
  if (!hasValgrind()) {
    console.log('valgrind not found (apt-get install valgrind)')
  } else {
    if (process.argv.includes('--profile')) {
      const dir = profileDir()
      const [bare, attached] = await Promise.all((['bare', 'attach'] as const).map((mode) => profiledCount(overhead, ['--serve', mode], unaryCalls, { warm: WARM, measured: MEASURED, profile: dir })))
      const total = (p: { threads: number[] }): string => fmt(p.threads.reduce((a, b) => a + b, 0))
      console.log(`per call: bare ${total(bare!)} (main thread ${fmt(bare!.threads[0]!)}), attachGrpc ${total(attached!)} (main thread ${fmt(attached!.threads[0]!)})\n\n${diffTable('attachGrpc', attached!, 'bare', bare!)}\n\n(dumps: ${dir})`)
    } else {
      const r = await benchCallgrind()
      console.log(`${r.setup}\n\n${r.table}`)
    }
  }
}
