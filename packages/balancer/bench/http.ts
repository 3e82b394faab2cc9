// End-to-end requests/s through the balancer vs undici's BalancedPool over the same
// upstreams (in a child process, so servers and client do not share a core's time).
// Same run, short alternating rounds; the ratio is the median of per-round ratios,
// which resists the drift of a shared, busy machine better than one long run each.
import { spawn, spawnSync } from 'node:child_process'
import { cpus } from 'node:os'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { BalancedPool } from 'undici'
import type { Dispatcher } from 'undici'
import { createBalancer, staticDiscovery } from '../src/index.ts'

// With taskset, the upstreams and the load generator get a core each instead of
// fighting over one (-a: every thread of the process, not only the main one).
const pinned = process.platform === 'linux' && cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0
const pin = (pid: number, cores: string): void => { if (pinned) spawnSync('taskset', ['-apc', cores, String(pid)], { stdio: 'ignore' }) }

export interface HttpResult {
  /** Upstreams and load generator on separate cores (taskset). */
  pinned: boolean
  upstreams: number
  concurrency: number
  seconds: number
  balancer: number[]
  balancedPool: number[]
  /** balancer / BalancedPool within each round (runs back to back, so load drift mostly cancels). */
  roundRatios: number[]
  /** Median of the round ratios. */
  ratio: number
  /** Load generator CPU (user + system) per request, µs, per round. */
  balancerCpuUs: number[]
  balancedPoolCpuUs: number[]
  /** Median of balancer / BalancedPool CPU per request within each round (< 1: the balancer costs less). */
  cpuRatio: number
}

export interface DriveResult {
  /** Requests per second. */
  rps: number
  /** This process's CPU time (user + system) per request, µs. */
  cpuUs: number
}

export async function drive (dispatcher: Dispatcher, origin: string, concurrency: number, ms: number): Promise<DriveResult> {
  let done = 0
  const end = performance.now() + ms
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const res = await dispatcher.request({ origin, path: '/', method: 'GET' })
      await res.body.dump()
      if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
      done++
    }
  }
  const start = performance.now()
  const cpu = process.cpuUsage()
  await Promise.all(Array.from({ length: concurrency }, worker))
  const used = process.cpuUsage(cpu)
  return { rps: done / ((performance.now() - start) / 1000), cpuUs: (used.user + used.system) / done }
}

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

export async function benchHttp ({ upstreams = 3, concurrency = 32, seconds = 1, rounds = 20 } = {}): Promise<HttpResult> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./upstreams.ts', import.meta.url)), String(upstreams)], { stdio: ['pipe', 'pipe', 'inherit'] })
  pin(child.pid!, '1')
  pin(process.pid, '0')
  try {
    const [line] = await once(createInterface({ input: child.stdout! }), 'line') as [string]
    const ports = JSON.parse(line) as number[]
    const origins = ports.map((p) => `http://127.0.0.1:${p}`)
    const balancer = createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: ports.map((p) => `127.0.0.1:${p}`) }), refreshIntervalMs: 0 })
    const pool = new BalancedPool(origins)
    const contenders: [name: 'balancer' | 'balancedPool', Dispatcher, string][] = [['balancer', balancer, 'http://orders'], ['balancedPool', pool, origins[0]!]]
    // Warm both: connections open, JIT settled.
    for (const [, d, origin] of contenders) await drive(d, origin, concurrency, 2_000)
    const result: HttpResult = { pinned, upstreams, concurrency, seconds, balancer: [], balancedPool: [], roundRatios: [], ratio: 0, balancerCpuUs: [], balancedPoolCpuUs: [], cpuRatio: 0 }
    const cpuRatios: number[] = []
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? contenders : [...contenders].reverse()
      for (const [name, d, origin] of order) {
        const { rps, cpuUs } = await drive(d, origin, concurrency, seconds * 1_000)
        result[name].push(rps)
        result[name === 'balancer' ? 'balancerCpuUs' : 'balancedPoolCpuUs'].push(cpuUs)
      }
      result.roundRatios.push(result.balancer[round]! / result.balancedPool[round]!)
      cpuRatios.push(result.balancerCpuUs[round]! / result.balancedPoolCpuUs[round]!)
    }
    result.ratio = median(result.roundRatios)
    result.cpuRatio = median(cpuRatios)
    await Promise.all([balancer.close(), pool.close()])
    return result
  } finally {
    pin(process.pid, `0-${cpus().length - 1}`)
    child.stdin!.end()
    await once(child, 'exit')
  }
}
