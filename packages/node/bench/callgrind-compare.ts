// Bisecting an instruction count: servers of overhead.ts under callgrind, two at a time (as
// callgrind.ts runs its sides), each count split by thread (the main thread first, then V8's
// GC helpers). With --profile, the first two variants' measured batches are dumped and the
// functions whose self cost differs most are listed, V8's JIT code named through the perf map.
// A variant is [label, "<server>:<mode>", { ENV: value }]: LAMEDUCK_BENCH_ATTACH (JSON merged
// into attach()'s options) and LAMEDUCK_BENCH_SECOND (another listener) are read by servers.ts.
//   node --conditions=@lameduck/source packages/node/bench/callgrind-compare.ts '[["bare","node-http:bare-otel",{}],["attach","node-http:attach-otel",{}]]' [--profile] [--warm 30000] [--measured 6000] [--connections 8]
import { parseArgs } from 'node:util'
import { diffTable, profileDir, profiledCount, type Profiled } from '@lameduck/test-utils'
import { keepAliveGets } from './load.ts'

type Variant = [label: string, server: string, env: Record<string, string>]

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { profile: { type: 'boolean', default: false }, warm: { type: 'string', default: '30000' }, measured: { type: 'string', default: '6000' }, connections: { type: 'string', default: '8' } }
})
const [WARM, MEASURED, CONNECTIONS] = [Number(values.warm), Number(values.measured), Number(values.connections)]
const overhead = new URL('./overhead.ts', import.meta.url)

const variants = JSON.parse(positionals[0] ?? '[]') as Variant[]
if (variants.length === 0) throw new Error('give the variants as JSON: [[label, "<server>:<mode>", { ENV: value }], ...]')
const dir = values.profile ? profileDir() : undefined
const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')
const results: Profiled[] = []
for (let i = 0; i < variants.length; i += 2) {
  const pair = variants.slice(i, i + 2)
  const counts = await Promise.all(pair.map(([, server, env]) => profiledCount(overhead, ['--serve', server], keepAliveGets(CONNECTIONS), { warm: WARM, measured: MEASURED, env, ...(i === 0 && dir !== undefined ? { profile: dir } : {}) })))
  counts.forEach((c, j) => { console.log(`${pair[j]![0]}: ${fmt(c.threads.reduce((a, b) => a + b, 0))} per request (main thread ${fmt(c.threads[0]!)}, helpers ${c.threads.slice(1).map(fmt).join(' ')})`) })
  results.push(...counts)
}
if (dir !== undefined && results.length >= 2) console.log(`\n${diffTable(variants[0]![0], results[0]!, variants[1]![0], results[1]!)}\n\n(dumps and their perf maps: ${dir})`)
