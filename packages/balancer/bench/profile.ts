// One contender alone under load, for `node --cpu-prof`: where the time goes.
//   node --single-threaded-gc --cpu-prof --cpu-prof-dir=prof --conditions=@lameduck/source bench/profile.ts [balancer|balancedPool|balancedPoolWithHeader] [seconds]
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { drive, openContender } from './http.ts'
import type { Contender } from './http.ts'

const which = (process.argv[2] ?? 'balancer') as Contender
const seconds = Number(process.argv[3] ?? 10)
const child = spawn('taskset', ['-c', '1', process.execPath, fileURLToPath(new URL('./upstreams.ts', import.meta.url)), '3'], { stdio: ['pipe', 'pipe', 'inherit'] })
const [line] = await once(createInterface({ input: child.stdout }), 'line') as [string]
const { dispatcher, origin, headers } = openContender(which, JSON.parse(line) as number[])
const { rps, cpuUs } = await drive(dispatcher, origin, 32, seconds * 1_000, headers)
console.log(`${which}: ${Math.round(rps)} req/s, ${cpuUs.toFixed(1)} µs CPU per request`)
await dispatcher.close()
child.stdin.end()
await once(child, 'exit')
