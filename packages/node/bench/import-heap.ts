// The heap an app carries for importing @lameduck/node: V8's used heap after two full GCs, in a
// fresh process each, Node alone vs after `import('@lameduck/node')` (the built package, as an app
// gets it: run `npm run build` first). What a module loads stays on the heap for good, and every
// full GC marks it (docs/benchmarks.md, 2026-11-28 11:45).
//   node packages/node/bench/import-heap.ts [--runs 3]
import { execFileSync } from 'node:child_process'
import { parseArgs } from 'node:util'

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } } })
const runs = Number(values.runs)

const child = (side: 'alone' | 'engine'): number =>
  Number(execFileSync(process.execPath, ['--expose-gc', new URL('./import-heap-child.mjs', import.meta.url).pathname, side]).toString())

const mb = (bytes: number): string => (bytes / 1e6).toFixed(2)
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const alone: number[] = []
const engine: number[] = []
for (let i = 0; i < runs; i++) { alone.push(child('alone')); engine.push(child('engine')) }
console.log(`heap after two full GCs, median of ${runs} fresh processes each: Node alone ${mb(median(alone))} MB; after import('@lameduck/node') ${mb(median(engine))} MB (+${mb(median(engine) - median(alone))} MB)`)
