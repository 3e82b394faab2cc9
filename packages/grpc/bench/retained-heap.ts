// The heap a grpc-js server keeps once warm, bare vs under attachGrpc(): per side a fresh
// server process (the bench's, server.ts), CALLS unary calls, four full GCs, then its heap by
// V8 space. Every full GC marks what stays, so in a small server this is a cost per call
// (callgrind.ts counts it); what a module load or a start-up leaves shows here in seconds.
//   node --conditions=@lameduck/source packages/grpc/bench/retained-heap.ts [--calls 30000] [--runs 3]
import { fork } from 'node:child_process'
import { once } from 'node:events'
import { parseArgs } from 'node:util'
import { getHeapSpaceStatistics } from 'node:v8'
import { unaryCalls } from './callgrind.ts'
import { serveBench, type BenchMode } from './server.ts'

interface Retained { used: number, spaces: Record<string, number> }

const { values } = parseArgs({ options: { serve: { type: 'string' }, calls: { type: 'string', default: '30000' }, runs: { type: 'string', default: '3' } } })

async function retained (mode: BenchMode, calls: number): Promise<Retained> {
  const child = fork(new URL(import.meta.url), ['--serve', mode], { execArgv: [...process.execArgv, '--expose-gc'] })
  const [{ port }] = await once(child, 'message') as [{ port: number }]
  const load = unaryCalls(port)
  await load.run(calls)
  child.send('retained')
  const [r] = await once(child, 'message') as [Retained]
  load.close()
  child.disconnect()
  await once(child, 'exit')
  return r
}

if (values.serve !== undefined) {
  process.on('message', (m) => {
    if (m !== 'retained') return
    for (let i = 0; i < 4; i++) (globalThis as { gc?: () => void }).gc!()
    const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size]))
    process.send!({ used: process.memoryUsage().heapUsed, spaces } satisfies Retained)
  })
  await serveBench(values.serve as BenchMode)
} else {
  const calls = Number(values.calls)
  const runs = Number(values.runs)
  const sides: Record<BenchMode, Retained[]> = { bare: [], attach: [] }
  for (let i = 0; i < runs; i++) for (const mode of ['bare', 'attach'] as const) sides[mode].push(await retained(mode, calls))
  const median = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const kb = (n: number): string => `${Math.round(n / 1024).toLocaleString('en-US')} KB`
  const bare = median(sides.bare.map((r) => r.used))
  const attached = median(sides.attach.map((r) => r.used))
  console.log(`heap kept after ${calls.toLocaleString('en-US')} calls and four full GCs, median of ${runs} fresh processes per side: bare ${kb(bare)}, attachGrpc ${kb(attached)} (+${kb(attached - bare)}; runs +${sides.attach.map((r, i) => kb(r.used - sides.bare[i]!.used)).join(', +')})`)
  for (const space of Object.keys(sides.bare[0]!.spaces)) {
    const b = median(sides.bare.map((r) => r.spaces[space]!))
    const a = median(sides.attach.map((r) => r.spaces[space]!))
    if (a !== 0 || b !== 0) console.log(`  ${space}: ${kb(b)} → ${kb(a)} (${a >= b ? '+' : ''}${kb(a - b)})`)
  }
}
