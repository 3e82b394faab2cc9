// End-to-end requests/s through the balancer vs undici's BalancedPool over the same
// upstreams (in a child process, so servers and client do not share a core's time),
// and BalancedPool sending the balancer's consumer header, to show what the header costs.
// Same run, short alternating rounds; the ratio is the median of per-round ratios,
// which resists the drift of a shared, busy machine better than one long run each.
// With `isolate` (the default), each measurement runs in a fresh load-generator process, so no
// contender shares JIT state or a heap with another (as in a real service, which has one).
import { fork, spawn, spawnSync } from 'node:child_process'
import { cpus } from 'node:os'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { BalancedPool } from 'undici'
import type { Dispatcher } from 'undici'
import { CONSUMER_HEADER, createBalancer, staticDiscovery } from '../src/index.ts'
import type { Balancer } from '../src/index.ts'
import { defaultConsumerId } from '../src/options.ts'

// With taskset, the upstreams and the load generator get a core each instead of
// fighting over one (-a: every thread of the process, not only the main one).
const pinned = process.platform === 'linux' && cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0
const pin = (pid: number, cores: string): void => { if (pinned) spawnSync('taskset', ['-apc', cores, String(pid)], { stdio: 'ignore' }) }

/** V8 flags of a pinned load-generator process (see isolated()). */
const LOAD_GENERATOR_FLAGS = ['--single-threaded-gc']

export type Contender = 'balancer' | 'balancedPool' | 'balancedPoolWithHeader'

export interface HttpResult {
  /** Upstreams and load generator on separate cores (taskset). */
  pinned: boolean
  /** Each measurement in a fresh load-generator process (the default; not with --in-process). */
  isolated: boolean
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

export function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const NAMES: Contender[] = ['balancer', 'balancedPool', 'balancedPoolWithHeader']

/** One contender over the upstreams at `ports`: its dispatcher, the origin to request, the headers to send. */
export function openContender (name: Contender, ports: number[]): { dispatcher: Dispatcher, origin: string, headers: Record<string, string> | undefined } {
  if (name === 'balancer') {
    return { dispatcher: createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: ports.map((p) => `127.0.0.1:${p}`) }), refreshIntervalMs: 0 }), origin: 'http://orders', headers: undefined }
  }
  const origins = ports.map((p) => `http://127.0.0.1:${p}`)
  // The header BalancedPool sends is the balancer's default id for this host: the same bytes on the wire.
  return { dispatcher: new BalancedPool(origins), origin: origins[0]!, headers: name === 'balancedPoolWithHeader' ? { [CONSUMER_HEADER]: defaultConsumerId() } : undefined }
}

type Measure = (name: Contender) => Promise<DriveResult>

/** All contenders in this process, warmed once, then measured round after round. */
async function inProcess (ports: number[], concurrency: number, seconds: number): Promise<{ measure: Measure, close: () => Promise<void> }> {
  const balancer = openContender('balancer', ports)
  const pool = openContender('balancedPool', ports)
  // BalancedPool with the header is the same pool, sending the balancer's own id.
  const contenders: Record<Contender, ReturnType<typeof openContender>> = {
    balancer,
    balancedPool: pool,
    balancedPoolWithHeader: { ...pool, headers: { [CONSUMER_HEADER]: (balancer.dispatcher as Balancer).consumerId } }
  }
  // Warm all: connections open, JIT settled.
  for (const c of Object.values(contenders)) await drive(c.dispatcher, c.origin, concurrency, 1_000, c.headers)
  return {
    measure: (name) => { const c = contenders[name]; return drive(c.dispatcher, c.origin, concurrency, seconds * 1_000, c.headers) },
    close: async () => { await Promise.all([balancer.dispatcher.close(), pool.dispatcher.close()]) }
  }
}

/** Each measurement in a fresh process (warmed for 1 s): no contender shares JIT state or a heap with another. */
function isolated (ports: number[], concurrency: number, seconds: number): { measure: Measure, close: () => Promise<void> } {
  return {
    async measure (name) {
      // Started on its core (taskset in front of node), not moved there after it began. On one core
      // V8's parallel GC helpers only contend with the main thread: each process then settled at one
      // of two speeds (15.5 or 21 µs per request, whichever dispatcher it drove), and the ratios
      // measured which processes landed slow. With the GC on the main thread, every one runs alike.
      const onCore = pinned ? { execPath: 'taskset', execArgv: ['-c', '0', process.execPath, ...process.execArgv, ...LOAD_GENERATOR_FLAGS] } : { execArgv: process.execArgv }
      const child = fork(fileURLToPath(new URL('./http-child.ts', import.meta.url)), [name, JSON.stringify(ports), String(concurrency), String(seconds)], { ...onCore, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
      const [result] = await once(child, 'message') as [DriveResult]
      await once(child, 'exit')
      return result
    },
    close: async () => {}
  }
}

export async function benchHttp ({ upstreams = 3, concurrency = 32, seconds = 1, rounds = 12, isolate = true } = {}): Promise<HttpResult> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./upstreams.ts', import.meta.url)), String(upstreams)], { stdio: ['pipe', 'pipe', 'inherit'] })
  pin(child.pid!, '1')
  pin(process.pid, '0')
  try {
    const [line] = await once(createInterface({ input: child.stdout! }), 'line') as [string]
    const ports = JSON.parse(line) as number[]
    const { measure, close } = isolate ? isolated(ports, concurrency, seconds) : await inProcess(ports, concurrency, seconds)
    const runs = { balancer: { rps: [], cpuUs: [] }, balancedPool: { rps: [], cpuUs: [] }, balancedPoolWithHeader: { rps: [], cpuUs: [] } } as HttpResult['runs']
    for (let round = 0; round < rounds; round++) {
      // Rotate who goes first, and alternate the direction.
      const order = [...NAMES.slice(round % 3), ...NAMES.slice(0, round % 3)]
      if (round % 2 === 1) order.reverse()
      for (const name of order) {
        const { rps, cpuUs } = await measure(name)
        runs[name].rps.push(rps)
        runs[name].cpuUs.push(cpuUs)
      }
    }
    await close()
    const versus = (name: Contender, key: 'rps' | 'cpuUs'): number => median(runs[name][key].map((v, i) => v / runs.balancedPool[key][i]!))
    return {
      pinned,
      isolated: isolate,
      upstreams,
      concurrency,
      seconds,
      runs,
      ratio: Object.fromEntries(NAMES.map((n) => [n, versus(n, 'rps')])) as HttpResult['ratio'],
      cpuRatio: Object.fromEntries(NAMES.map((n) => [n, versus(n, 'cpuUs')])) as HttpResult['cpuRatio']
    }
  } finally {
    pin(process.pid, `0-${cpus().length - 1}`)
    child.stdin!.end()
    await once(child, 'exit')
  }
}
