// End-to-end requests/s through the balancer vs undici's BalancedPool over the same
// upstreams (in a child process, so servers and client do not share a core's time),
// and BalancedPool sending the balancer's consumer header, to show what the header costs.
// Same run, short alternating rounds; the ratio is the median of per-round ratios,
// which resists the drift of a shared, busy machine better than one long run each.
import { spawn, spawnSync } from 'node:child_process'
import { cpus } from 'node:os'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { BalancedPool } from 'undici'
import type { Dispatcher } from 'undici'
import { CONSUMER_HEADER, createBalancer, staticDiscovery } from '../src/index.ts'

// With taskset, the upstreams and the load generator get a core each instead of
// fighting over one (-a: every thread of the process, not only the main one).
const pinned = process.platform === 'linux' && cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0
const pin = (pid: number, cores: string): void => { if (pinned) spawnSync('taskset', ['-apc', cores, String(pid)], { stdio: 'ignore' }) }

export type Contender = 'balancer' | 'balancedPool' | 'balancedPoolWithHeader'

export interface HttpResult {
  /** Upstreams and load generator on separate cores (taskset). */
  pinned: boolean
  upstreams: number
  concurrency: number
  seconds: number
  /**
   * Per round: requests/s and load-generator CPU per request (µs). balancedPoolWithHeader
   * sends the balancer's x-lameduck-consumer header too: the cost of the header alone.
   */
  runs: Record<Contender, { rps: number[], cpuUs: number[] }>
  /** Median over rounds of (contender / BalancedPool) within the round (back to back, so load drift mostly cancels). */
  ratio: Record<Contender, number>
  cpuRatio: Record<Contender, number>
}

export interface DriveResult {
  /** Requests per second. */
  rps: number
  /** This process's CPU time (user + system) per request, µs. */
  cpuUs: number
}

export async function drive (dispatcher: Dispatcher, origin: string, concurrency: number, ms: number, headers?: Record<string, string>): Promise<DriveResult> {
  let done = 0
  const end = performance.now() + ms
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const res = await dispatcher.request({ origin, path: '/', method: 'GET', headers })
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
    const header = { [CONSUMER_HEADER]: balancer.consumerId }
    const contenders: Array<[Contender, Dispatcher, string, Record<string, string> | undefined]> = [
      ['balancer', balancer, 'http://orders', undefined],
      ['balancedPool', pool, origins[0]!, undefined],
      ['balancedPoolWithHeader', pool, origins[0]!, header]
    ]
    // Warm all: connections open, JIT settled.
    for (const [, d, origin, headers] of contenders) await drive(d, origin, concurrency, 1_000, headers)
    const runs = { balancer: { rps: [], cpuUs: [] }, balancedPool: { rps: [], cpuUs: [] }, balancedPoolWithHeader: { rps: [], cpuUs: [] } } as HttpResult['runs']
    for (let round = 0; round < rounds; round++) {
      // Rotate who goes first, and alternate the direction.
      const order = [...contenders.slice(round % 3), ...contenders.slice(0, round % 3)]
      if (round % 2 === 1) order.reverse()
      for (const [name, d, origin, headers] of order) {
        const { rps, cpuUs } = await drive(d, origin, concurrency, seconds * 1_000, headers)
        runs[name].rps.push(rps)
        runs[name].cpuUs.push(cpuUs)
      }
    }
    const versus = (name: Contender, key: 'rps' | 'cpuUs'): number => median(runs[name][key].map((v, i) => v / runs.balancedPool[key][i]!))
    const names: Contender[] = ['balancer', 'balancedPool', 'balancedPoolWithHeader']
    const result: HttpResult = {
      pinned,
      upstreams,
      concurrency,
      seconds,
      runs,
      ratio: Object.fromEntries(names.map((n) => [n, versus(n, 'rps')])) as HttpResult['ratio'],
      cpuRatio: Object.fromEntries(names.map((n) => [n, versus(n, 'cpuUs')])) as HttpResult['cpuRatio']
    }
    await Promise.all([balancer.close(), pool.close()])
    return result
  } finally {
    pin(process.pid, `0-${cpus().length - 1}`)
    child.stdin!.end()
    await once(child, 'exit')
  }
}
