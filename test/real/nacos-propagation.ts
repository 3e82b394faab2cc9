// Prints the real-Nacos propagation table for docs/benchmarks.md:
//   node --conditions=@lameduck/source test/real/nacos-propagation.ts [drains] [version...]
import { measureNacosPropagation, propagationTable } from './helpers/nacos-propagation.ts'
import type { NacosVersion } from './helpers/nacos-modern.ts'

const drains = Number(process.argv[2] ?? 20)
const versions = (process.argv.slice(3).length > 0 ? process.argv.slice(3) : ['2.3.1', '3.1.0']) as NacosVersion[]
const runs = []
for (const version of versions) runs.push(...await measureNacosPropagation(version, { drains, pollTransport: version === '3.1.0' ? 'v3' : 'v1' }))
console.log(propagationTable(runs))
for (const run of runs) {
  for (const consumer of ['java-grpc', 'node-push', 'node-poll']) {
    const ms = run.drains.filter((d) => d.consumer === consumer).map((d) => d.droppedMs)
    if (ms.length > 0) console.log(`${run.version} ${run.phase} ${consumer} per drain (ms): ${ms.join(' ')}`)
  }
}
