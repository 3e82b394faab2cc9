// Instructions per request, bare vs with attach(), with and without the OpenTelemetry
// SDK registered, counted by valgrind's callgrind in the server process (the servers of
// overhead.ts): the goal (≥ 0.98 of the bare server) sits inside the ±5 % that req/s
// swings on a shared machine, and instructions do not swing. Per side: WARM requests,
// counters zeroed, MEASURED requests, counters read (every thread), ÷ MEASURED.
//   node --conditions=@lameduck/source packages/node/bench/callgrind.ts
import { hasValgrind, instructionsPer, pairedCounts, STEADY_GC_FLAGS } from '@lameduck/test-utils'
import { keepAliveGets } from './load.ts'
import type { Mode, ServerKind } from './servers.ts'

// V8 still compiles and re-tiers Node's and the app's code long after start-up: after 3,000
// requests that work was a fifth of the count (bare node:http 78,000 vs 64,000 instructions per
// request after 30,000), and lameduck's code settled later than the rest (attach() 68,500 after
// 15,000, 66,900 after 30,000). The count is of a server in its steady state.
const WARM = Number(process.env.BENCH_CALLGRIND_WARM ?? 30_000)
const MEASURED = Number(process.env.BENCH_CALLGRIND_CALLS ?? 6_000)
// A major GC still falls into some batches (a bare round at 83,700 among two at 64,200): each side
// runs ROUNDS times, a fresh process each, and the medians are compared.
const ROUNDS = Number(process.env.BENCH_CALLGRIND_ROUNDS ?? 3)
const CONNECTIONS = 8
const overhead = new URL('./overhead.ts', import.meta.url)

function perRequest (kind: ServerKind, mode: Mode): Promise<number> {
  return instructionsPer(overhead, ['--serve', `${kind}:${mode}`], keepAliveGets(CONNECTIONS), { warm: WARM, measured: MEASURED })
}

export interface EngineCallgrind { table: string, setup: string, ratios: Record<string, number> }

const ROWS: Array<{ label: string, kind: ServerKind, bare: Mode, attached: Mode }> = [
  { label: 'node:http', kind: 'node-http', bare: 'bare', attached: 'attach' },
  { label: 'node:http + OTel SDK', kind: 'node-http', bare: 'bare-otel', attached: 'attach-otel' },
  { label: 'Express 5 + OTel SDK', kind: 'express', bare: 'bare-otel', attached: 'attach-otel' }
]

export async function benchEngineCallgrind (rows = ROWS): Promise<EngineCallgrind> {
  // The SDK's own collection period (60 s): per request, not per second of valgrind's slow clock.
  process.env.LAMEDUCK_BENCH_OTEL_COLLECT_MS = '60000'
  const lines = ['| hello world | instructions per request, bare | with attach() | added | **ratio (bare ÷ attach())** | rounds (bare / attach()) |', '|---|---:|---:|---:|---:|---|']
  const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')
  const ratios: Record<string, number> = {}
  for (const row of rows) {
    const c = await pairedCounts(ROUNDS, () => perRequest(row.kind, row.bare), () => perRequest(row.kind, row.attached))
    const [bare, attached] = [c.bare.median, c.attached.median]
    ratios[row.label] = c.ratio
    lines.push(`| ${row.label} | ${fmt(bare)} | ${fmt(attached)} | ${fmt(attached - bare)} | **${c.ratio.toFixed(3)}** | ${c.bare.rounds.map((b, i) => `${fmt(b)} / ${fmt(c.attached.rounds[i]!)}`).join('; ')} |`)
  }
  const setup = `valgrind --tool=callgrind on the server process (overhead.ts --serve), V8's GC schedule fixed (${STEADY_GC_FLAGS.join(' ')}, both sides); per side, ${WARM.toLocaleString('en-US')} keep-alive GETs on ${CONNECTIONS} connections, counters zeroed (callgrind_control -z), ${MEASURED.toLocaleString('en-US')} more on the same connections, counters read (every thread), ÷ ${MEASURED.toLocaleString('en-US')}; a fresh process per side and round, the median of ${ROUNDS} rounds. "OTel SDK": both sides with the SDK registered (otel-sdk.ts), metrics collected at the SDK's default 60 s (a collection's cost is per second, not per request; under valgrind a second holds only a few hundred requests).`
  return { table: lines.join('\n'), setup, ratios }
}

if (import.meta.main) {
  if (!hasValgrind()) {
    console.log('valgrind not found (apt-get install valgrind)')
  } else {
    const only = process.argv[2]
    const r = await benchEngineCallgrind(only === undefined ? ROWS : ROWS.filter((row) => row.label.includes(only)))
    console.log(`${r.setup}\n\n${r.table}`)
  }
}
