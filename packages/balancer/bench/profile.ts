// One contender alone under load, for `node --cpu-prof`: where the time goes.
//   node --cpu-prof --cpu-prof-dir=prof --conditions=@lameduck/source bench/profile.ts [balancer|balancedPool|balancedPoolWithHeader] [seconds]
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { hostname } from 'node:os'
import { fileURLToPath } from 'node:url'
import { BalancedPool } from 'undici'
import { CONSUMER_HEADER, createBalancer, staticDiscovery } from '../src/index.ts'
import { drive } from './http.ts'

const which = process.argv[2] ?? 'balancer'
const seconds = Number(process.argv[3] ?? 10)
const child = spawn('taskset', ['-c', '1', process.execPath, fileURLToPath(new URL('./upstreams.ts', import.meta.url)), '3'], { stdio: ['pipe', 'pipe', 'inherit'] })
const [line] = await once(createInterface({ input: child.stdout }), 'line') as [string]
const ports = JSON.parse(line) as number[]
const dispatcher = which === 'balancer'
  ? createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: ports.map((p) => `127.0.0.1:${p}`) }), refreshIntervalMs: 0 })
  : new BalancedPool(ports.map((p) => `http://127.0.0.1:${p}`))
const origin = which === 'balancer' ? 'http://orders' : `http://127.0.0.1:${ports[0]}`
// balancedPoolWithHeader: BalancedPool sending the balancer's header (an id of the default's shape), the cost of the header alone.
const headers = which === 'balancedPoolWithHeader' ? { [CONSUMER_HEADER]: `${hostname()}-0123abcd` } : undefined
const { rps, cpuUs } = await drive(dispatcher, origin, 32, seconds * 1_000, headers)
console.log(`${which}: ${Math.round(rps)} req/s, ${cpuUs.toFixed(1)} µs CPU per request`)
await dispatcher.close()
child.stdin.end()
await once(child, 'exit')
