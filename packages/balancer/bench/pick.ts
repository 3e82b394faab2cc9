// ns per pick and heap growth: the balancer's public pick path (service lookup +
// EDF scheduler), with weights that differ so the heap really reorders.
import { createBalancer, staticDiscovery } from '../src/index.ts'

export interface PickResult {
  instances: number
  /** Median over the timed runs. */
  nsPerPick: number
  heapGrowthBytes: number | null
  /** Picks made between the two heap readings. */
  picks: number
}

const gc = (globalThis as { gc?: () => void }).gc

function heapUsed (): number {
  gc?.()
  gc?.()
  return process.memoryUsage().heapUsed
}

/** Median of `repeats` timed runs of `picks` picks; heap measured across all of them. */
export function benchPick (instances: number, picks = 1_000_000, repeats = 5): PickResult {
  const list = Array.from({ length: instances }, (_, i) => ({
    service: 'orders', host: `10.0.${i >> 8}.${i & 255}`, port: 8080, weight: 50 + (i % 7) * 25
  }))
  const balancer = createBalancer({ service: 'orders', discovery: staticDiscovery(list), refreshIntervalMs: 0 })
  let sink = 0
  for (let i = 0; i < 200_000; i++) sink += balancer.pick('orders').port // warm up: let the JIT settle
  const before = heapUsed()
  const runs: number[] = []
  for (let r = 0; r < repeats; r++) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < picks; i++) sink += balancer.pick('orders').port
    runs.push(Number(process.hrtime.bigint() - start) / picks)
  }
  const after = gc === undefined ? null : heapUsed()
  balancer.close().catch(() => {})
  if (sink === 0) throw new Error('unreachable')
  runs.sort((a, b) => a - b)
  return { instances, nsPerPick: runs[repeats >> 1]!, heapGrowthBytes: after === null ? null : after - before, picks: picks * repeats }
}
