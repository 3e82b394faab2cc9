// Soak: the rollout lab's benchmark run, many times in a row in one process, to
// see whether anything accumulates. runRollout builds its consumer side in this
// process each run (the registry server, eureka-js-client + the balancer, the
// load generator; providers are child processes), so this process's heap and
// file descriptors after each run show what the consumer side leaves behind.
// Run by hand, not in `npm test`:
//   node --expose-gc --conditions=@lameduck/source packages/devkit/bench/soak.ts [--runs 20] [--rps 500] [--registry eureka] [--mode lameduck]
import { readdirSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { runRollout, type RegistryKind, type RolloutMode } from '@lameduck/devkit'

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    rps: { type: 'string', default: '500' },
    registry: { type: 'string', default: 'eureka' },
    mode: { type: 'string', default: 'lameduck' },
    sidecar: { type: 'boolean', default: false }
  }
})
const runs = Number(values.runs)
const rps = Number(values.rps)
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) {
  process.stderr.write('soak: run with --expose-gc so heap numbers are measured after a full collection\n')
  process.exit(2)
}

interface Sample { run: number, requests: number, failed: number, failures: string, seconds: number, heapMiB: number, fds: number, handles: number }

const fds = (): number => readdirSync('/proc/self/fd').length
// Active libuv handles (sockets, timers, servers), where the runtime can tell.
const handles = (): number => (process as unknown as { getActiveResourcesInfo?: () => string[] }).getActiveResourcesInfo?.().length ?? -1

async function settle (): Promise<{ heapMiB: number, fds: number, handles: number }> {
  // Closed sockets and timers go away on the next turns; then two full collections.
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 100))
  gc!()
  await new Promise((resolve) => setImmediate(resolve))
  gc!()
  return { heapMiB: process.memoryUsage().heapUsed / 1024 / 1024, fds: fds(), handles: handles() }
}

const before = await settle()
const samples: Sample[] = []
process.stderr.write(`soak: ${runs} runs, ${values.registry} path, ${values.mode} mode, ${rps} req/s; before: heap ${before.heapMiB.toFixed(1)} MiB, ${before.fds} fds, ${before.handles} handles\n`)
for (let run = 1; run <= runs; run++) {
  const started = Date.now()
  const report = await runRollout({ registry: values.registry as RegistryKind, mode: values.mode as RolloutMode, sidecar: values.sidecar, rps })
  const seconds = (Date.now() - started) / 1000
  const after = await settle()
  const f = report.failures
  const sample: Sample = { run, requests: report.total, failed: report.failed, failures: `${f.refused}/${f.noInstance}/${f.reset}/${f.status5xx}/${f.timeout}/${f.other}`, seconds, ...after }
  samples.push(sample)
  process.stderr.write(`run ${run}: ${sample.requests} requests, ${sample.failed} failed, ${seconds.toFixed(1)} s, heap ${after.heapMiB.toFixed(1)} MiB, ${after.fds} fds, ${after.handles} handles\n`)
}

/** Least-squares slope of y over the run number: growth per run, robust to one noisy sample. */
function slope (ys: number[]): number {
  const n = ys.length
  const mx = (n + 1) / 2
  const my = ys.reduce((a, b) => a + b, 0) / n
  let num = 0
  let den = 0
  ys.forEach((y, i) => { num += (i + 1 - mx) * (y - my); den += (i + 1 - mx) ** 2 })
  return den === 0 ? 0 : num / den
}

const heap = samples.map((s) => s.heapMiB)
const fd = samples.map((s) => s.fds)
const total = samples.reduce((n, s) => n + s.requests, 0)
const failed = samples.reduce((n, s) => n + s.failed, 0)
const out: string[] = []
out.push(`## Soak: ${runs} rollout-lab runs in one process (${values.registry} path, ${values.mode} mode${values.sidecar ? ', Envoy sidecars' : ''}, ${rps} req/s)\n`)
out.push(`Node ${process.version}. Measured in the process that runs the lab's consumer side (registry server, discovery client, balancer, load generator), after two full GCs. Failures: refused / no instance / reset / 5xx / timeout / other.\n`)
out.push('| run | requests | failed | failures | run time | heapUsed | open fds | handles |')
out.push('|---:|---:|---:|---|---:|---:|---:|---:|')
out.push(`| before | – | – | – | – | ${before.heapMiB.toFixed(1)} MiB | ${before.fds} | ${before.handles} |`)
for (const s of samples) out.push(`| ${s.run} | ${s.requests} | ${s.failed} | ${s.failures} | ${s.seconds.toFixed(1)} s | ${s.heapMiB.toFixed(1)} MiB | ${s.fds} | ${s.handles} |`)
out.push('')
out.push(`Total: ${total} requests, ${failed} failed (${((100 * failed) / Math.max(1, total)).toFixed(3)} %).\n`)
out.push('Growth:\n')
out.push(`- heapUsed: ${heap[0]!.toFixed(1)} → ${heap.at(-1)!.toFixed(1)} MiB after run 1 → run ${runs} (${(heap.at(-1)! - heap[0]!).toFixed(1)} MiB), least-squares slope ${slope(heap).toFixed(3)} MiB/run; ${(heap.at(-1)! - before.heapMiB).toFixed(1)} MiB over the baseline before run 1`)
// Run 1 (and 2) still hold what warms up once: compiled code, lazily created clients. Steady growth is measured after them.
const warm = Math.min(2, Math.max(0, runs - 2))
out.push(`- heapUsed after warm-up (runs ${warm + 1}–${runs}): ${heap[warm]!.toFixed(1)} → ${heap.at(-1)!.toFixed(1)} MiB, slope ${(slope(heap.slice(warm)) * 1024).toFixed(0)} KiB/run`)
out.push(`- open fds: ${fd[0]} → ${fd.at(-1)} after run 1 → run ${runs} (${fd.at(-1)! - fd[0]!}), slope ${slope(fd).toFixed(2)} fds/run; ${fd.at(-1)! - before.fds} over the baseline`)
const resources = (process as unknown as { getActiveResourcesInfo?: () => string[] }).getActiveResourcesInfo?.() ?? []
out.push(`- active handles: ${samples[0]!.handles} → ${samples.at(-1)!.handles} (now: ${resources.join(', ') || 'none'})`)
process.stdout.write(out.join('\n') + '\n')
