// The dispatch layer alone: the balancer and undici's BalancedPool, each over pools
// whose dispatch answers at once (no sockets, no header processing), so what is
// measured is only what each adds on top of its pools: route, pick, the consumer
// header's array, the per-request handler, the drain-signal read. Alternating
// rounds in one process; ns per request, median of rounds.
import { BalancedPool, Pool } from 'undici'
import type { Dispatcher } from 'undici'
import { createBalancer, staticDiscovery } from '../src/index.ts'
import { median } from './http.ts'

const controller = { abort () {}, pause () {}, resume () {}, aborted: false, paused: false, reason: null, rawHeaders: undefined, rawTrailers: undefined }
const body = Buffer.from('{"hello":"world"}')
const responseHeaders = { 'content-type': 'application/json', 'content-length': String(body.length) }

/** A Pool (BalancedPool needs one: it reads the pool's origin) whose dispatch answers in place. */
class AnsweringPool extends Pool {
  override dispatch (_opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    handler.onRequestStart?.(controller, {})
    handler.onResponseStart?.(controller, 200, responseHeaders, 'OK')
    handler.onResponseData?.(controller, body)
    handler.onResponseEnd?.(controller, {})
    return true
  }
}

export interface LayerResult {
  instances: number
  requests: number
  rounds: number
  /** Median over rounds, ns per request. */
  nsPerRequest: { balancer: number, balancedPool: number }
  /** Median over rounds of (balancer - BalancedPool), ns per request. */
  addedNs: number
  /** Heap allocated per request by each layer (young-generation garbage, which drives scavenges); null without --expose-gc. */
  bytesPerRequest: { balancer: number, balancedPool: number } | null
}

const gc = (globalThis as { gc?: () => void }).gc
/** Small enough (well under 1 MB of garbage) that no scavenge runs inside a sample. */
const ALLOC_REQUESTS = 1_000

/**
 * Heap growth per request over ALLOC_REQUESTS dispatches after a full GC, the
 * options objects made beforehand; median of 11 samples. Needs --expose-gc.
 */
function allocated (d: Dispatcher, origin: string, handler: Dispatcher.DispatchHandler): number {
  const samples: number[] = []
  for (let s = 0; s < 11; s++) {
    const opts = Array.from({ length: ALLOC_REQUESTS }, () => ({ origin, path: '/', method: 'GET' }))
    gc!(); gc!()
    const before = process.memoryUsage().heapUsed
    for (let i = 0; i < ALLOC_REQUESTS; i++) d.dispatch(opts[i]!, handler)
    samples.push((process.memoryUsage().heapUsed - before) / ALLOC_REQUESTS)
  }
  return median(samples)
}

export function benchLayer ({ instances = 3, requests = 1_000_000, rounds = 7 } = {}): LayerResult {
  const factory = (origin: string | URL, opts: object): Dispatcher => new AnsweringPool(origin, opts)
  const addresses = Array.from({ length: instances }, (_, i) => `127.0.0.1:${3001 + i}`)
  const balancer = createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: addresses }), refreshIntervalMs: 0, factory })
  const pool = new BalancedPool(addresses.map((a) => `http://${a}`), { factory })
  let ended = 0
  const handler: Dispatcher.DispatchHandler = {
    onRequestStart () {},
    onResponseEnd () { ended++ },
    onResponseError (_c, err) { throw err }
  }
  const run = (d: Dispatcher, origin: string): number => {
    const start = process.hrtime.bigint()
    for (let i = 0; i < requests; i++) d.dispatch({ origin, path: '/', method: 'GET' }, handler)
    return Number(process.hrtime.bigint() - start) / requests
  }
  const contenders: Array<[keyof LayerResult['nsPerRequest'], Dispatcher, string]> = [['balancer', balancer, 'http://orders'], ['balancedPool', pool, `http://${addresses[0]}`]]
  for (const [, d, origin] of contenders) run(d, origin) // warm up: JIT settled
  const ns = { balancer: [] as number[], balancedPool: [] as number[] }
  for (let r = 0; r < rounds; r++) {
    for (const [name, d, origin] of r % 2 === 0 ? contenders : [...contenders].reverse()) ns[name].push(run(d, origin))
  }
  if (ended !== requests * (2 * rounds + 2)) throw new Error(`layer bench: ${ended} responses for ${requests * (2 * rounds + 2)} requests`)
  const bytesPerRequest = gc === undefined ? null : { balancer: allocated(balancer, 'http://orders', handler), balancedPool: allocated(pool, `http://${addresses[0]}`, handler) }
  balancer.close().catch(() => {})
  pool.close().catch(() => {})
  return {
    instances,
    requests,
    rounds,
    nsPerRequest: { balancer: median(ns.balancer), balancedPool: median(ns.balancedPool) },
    addedNs: median(ns.balancer.map((b, i) => b - ns.balancedPool[i]!)),
    bytesPerRequest
  }
}

if (import.meta.main) {
  const r = benchLayer()
  const bytes = r.bytesPerRequest === null ? ' (run with --expose-gc for bytes per request)' : `; allocated per request: balancer ${r.bytesPerRequest.balancer.toFixed(0)} B, BalancedPool ${r.bytesPerRequest.balancedPool.toFixed(0)} B`
  console.log(`${r.instances} instances, ${r.requests} requests per round, ${r.rounds} rounds: balancer ${r.nsPerRequest.balancer.toFixed(0)} ns, BalancedPool ${r.nsPerRequest.balancedPool.toFixed(0)} ns, added ${r.addedNs.toFixed(0)} ns per request${bytes}`)
}
