// npm run bench (in packages/balancer): pick cost, the dispatch layer's own cost, and end-to-end throughput, as a
// markdown table. Options: --quick (shorter runs), --json FILE (write the numbers),
// --in-process (all end-to-end measurements in this process, sharing its JIT state
// and heap; by default each runs in a fresh load-generator process).
//   BENCH_ROUNDS, BENCH_SECONDS, BENCH_CONCURRENCY override the HTTP run.
import { writeFileSync } from 'node:fs'
import { benchPick } from './pick.ts'
import { benchHttp } from './http.ts'
import { benchLayer } from './layer.ts'
import type { Contender } from './http.ts'

const args = process.argv.slice(2)
const quick = args.includes('--quick')
const isolate = !args.includes('--in-process')
const jsonAt = args.indexOf('--json')
const jsonFile = jsonAt === -1 ? undefined : args[jsonAt + 1]

const picks = [10, 100, 1000].map((n) => benchPick(n, quick ? 200_000 : 1_000_000))
const layer = benchLayer({ requests: quick ? 200_000 : 1_000_000 })
const http = await benchHttp({
  rounds: Number(process.env.BENCH_ROUNDS ?? (quick ? 2 : 12)),
  seconds: Number(process.env.BENCH_SECONDS ?? 1),
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 32),
  isolate
})

const kb = (bytes: number | null): string => bytes === null ? 'n/a (run with --expose-gc)' : `${(bytes / 1024).toFixed(1)} KiB`
const rps = (values: number[]): string => values.map((v) => Math.round(v).toLocaleString('en-US')).join(' / ')

const rows: Array<[Contender, string]> = [['balancer', '@lameduck/balancer'], ['balancedPool', 'undici BalancedPool'], ['balancedPoolWithHeader', 'BalancedPool + x-lameduck-consumer']]
const lines = [
  `## @lameduck/balancer (node ${process.version})`,
  '',
  '| instances | ns / pick, median of 5 runs (goal ≤ 100 at 100) | heap growth over the picks |',
  '|---:|---:|---:|',
  ...picks.map((p) => `| ${p.instances} | ${p.nsPerPick.toFixed(1)} | ${kb(p.heapGrowthBytes)} over ${p.picks.toLocaleString('en-US')} |`),
  '',
  `Dispatch layer alone (each over ${layer.instances} pools that answer in place: no sockets, no header processing; ${layer.requests.toLocaleString('en-US')} requests per round, ${layer.rounds} alternating rounds, medians): balancer ${layer.nsPerRequest.balancer.toFixed(0)} ns, BalancedPool ${layer.nsPerRequest.balancedPool.toFixed(0)} ns per request, **${layer.addedNs.toFixed(0)} ns added**${layer.bytesPerRequest === null ? '' : `; heap allocated per request: balancer ${layer.bytesPerRequest.balancer.toFixed(0)} B, BalancedPool ${layer.bytesPerRequest.balancedPool.toFixed(0)} B`}.`,
  '',
  `End to end: ${http.upstreams} node:http upstreams in a child process, ${http.concurrency} concurrent undici.request, ${http.seconds} s per run, ${http.runs.balancer.rps.length} rounds in rotating order${http.isolated ? ', each measurement in a fresh load-generator process (warmed 1 s)' : ', all in this process'}${http.pinned ? `; upstreams and load generator pinned to separate cores (taskset)${http.isolated ? ', the load generator with V8\'s single-threaded GC' : ''}` : ' (not pinned: no taskset)'}. Ratios: median over rounds of the ratio to BalancedPool within the round.`,
  '',
  '| dispatcher | requests/s per round | ratio | load generator CPU µs / request per round | ratio |',
  '|---|---|---:|---|---:|',
  ...rows.map(([name, label]) => `| ${label} | ${rps(http.runs[name].rps)} | ${name === 'balancer' ? `**${http.ratio[name].toFixed(3)}**` : http.ratio[name].toFixed(3)} | ${http.runs[name].cpuUs.map((v) => v.toFixed(1)).join(' / ')} | ${http.cpuRatio[name].toFixed(3)} |`),
  '',
  'Goal: balancer ≥ 0.95 of BalancedPool in requests/s.'
]
console.log(lines.join('\n'))
if (jsonFile !== undefined) writeFileSync(jsonFile, JSON.stringify({ node: process.version, picks, layer, http }, null, 2) + '\n')
