// Prints the real-Nacos propagation table for docs/benchmarks.md:
//   node --conditions=@lameduck/source test/real/nacos-propagation.ts [drains]
import { measureNacosPropagation, propagationTable } from './helpers/nacos-propagation.ts'

const drains = Number(process.argv[2] ?? 20)
const runs = []
for (const push of [true, false]) runs.push(await measureNacosPropagation({ push, drains }))
console.log(propagationTable(runs))
for (const run of runs) console.log(`push ${run.push ? 'on' : 'off'} per drain (ms): ${run.drains.map((d) => d.lastRequestMs).join(' ')}`)
