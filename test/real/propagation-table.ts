// Prints the propagation table of docs/benchmarks.md ("Real Eureka: propagation measured"):
//   node --conditions=@lameduck/source test/real/propagation-table.ts [drains=20] [scale=0.1]
// Needs the jars (bash test/real/build.sh).
import { measurePropagation, table } from './helpers/propagation.ts'

const drains = Number(process.argv[2] ?? 20)
const scale = Number(process.argv[3] ?? 0.1)
const m = await measurePropagation({ scale, drains, naiveControl: true, log: (line) => console.error(line) })
console.log(table(m))
