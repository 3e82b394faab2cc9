// The rolling-deploy lab N times in a row while CPU hogs spin (every core by default):
// a loss that shows once in dozens of runs (a race) shows here, with the
// failed requests of each run and when they happened.
//   node --conditions=@lameduck/source scripts/rollout-under-hog.ts [--runs 40] [--core all] [--registry none] [--mode lameduck] [--sidecar]
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { runRollout, type RolloutOptions } from '@lameduck/devkit'
import { drainSummaries } from '../test/lab-checks.ts'
import { startHog } from './hog.ts'

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '40' },
    core: { type: 'string', default: 'all' },
    registry: { type: 'string', default: 'none' },
    mode: { type: 'string', default: 'lameduck' },
    rps: { type: 'string', default: '300' },
    sidecar: { type: 'boolean', default: false }
  }
})
const runs = Number(values.runs)
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive integer (got ${values.runs})`)
const options: RolloutOptions = { registry: values.registry as RolloutOptions['registry'], mode: values.mode as RolloutOptions['mode'], rps: Number(values.rps), ...(values.sidecar ? { sidecar: true } : {}) }

/** The kernel's count of connections a full accept queue dropped (Linux; null elsewhere). */
function listenOverflows (): number | null {
  try {
    const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n').filter((l) => l.startsWith('TcpExt:'))
    const [names, values] = lines.map((l) => l.trim().split(/\s+/))
    const at = names?.indexOf('ListenOverflows') ?? -1
    return at > 0 && values !== undefined ? Number(values[at]) : null
  } catch { return null }
}

const hog = startHog(values.core)
let lossy = 0
let lost = 0
let total = 0
try {
  for (let i = 1; i <= runs; i++) {
    const overflowsBefore = listenOverflows()
    const r = await runRollout(options)
    const overflows = overflowsBefore === null ? null : listenOverflows()! - overflowsBefore
    total += r.total
    lost += r.failed
    if (r.failed > 0) lossy++
    const samples = r.failureSamples.slice(0, 3).map((f) => `${f.outcome} at ${f.t} ms after ${f.ms} ms (${f.detail ?? ''}; to ${f.to ?? '?'}, socket ${f.socketMs === undefined ? 'never' : `after ${f.socketMs} ms`})`).join(', ')
    const lag = `event-loop lag max: consumer ${r.eventLoopLag.consumer.maxMs} ms, providers ${r.eventLoopLag.providers.maxMs} ms; accept-queue overflows: ${overflows ?? 'n/a'}`
    console.log(`run ${i}/${runs}: ${r.failed} of ${r.total} failed (${lag})${samples === '' ? '' : `: ${samples}`}`)
    if (r.failed > 0) console.log(`  markers: ${JSON.stringify(r.timeline.markers)}\n  drains: ${JSON.stringify(drainSummaries(r))}`)
  }
} finally {
  hog.kill()
}
console.log(`\n${runs} runs of ${JSON.stringify(options)} under CPU hogs on core(s) ${values.core}: ${lossy} with loss, ${lost} of ${total} requests failed`)
process.exitCode = lossy === 0 ? 0 : 1
