// The rollout lab on the real Eureka server, repeated: one markdown table of every run, per consumer
// and mode (docs/benchmarks.md, "Rollout lab on the real Eureka server"). `npm run bench` runs it.
//   node --conditions=@lameduck/source test/real/rollout-table.ts [runs=5] [consumers=spring,node,balancer]
import type { RolloutMode, RolloutReport } from '@lameduck/devkit'
import type { RealConsumer } from './rollout/path-eureka-real.ts'
import { realPeriods } from './rollout/path-eureka-real.ts'
import { runRealRollout } from './rollout/run.ts'

const runs = Number(process.argv[2] ?? 5)
const consumers = (process.argv[3] ?? 'spring,node,balancer').split(',') as RealConsumer[]
const modes: RolloutMode[] = ['lameduck', 'naive']
const scale = 0.1
const rows: string[] = []
const totals = new Map<string, { lost: number[], requests: number, killed: number }>()
const CONSUMER: Record<RealConsumer, string> = {
  spring: 'Java: Spring Cloud Eureka client + LoadBalancer',
  node: 'Node: eureka-js-client, round robin',
  balancer: 'Node: @lameduck/balancer over eureka-js-client'
}

const failures = (r: RolloutReport): string => Object.entries(r.failures).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(', ') || '–'

for (let run = 1; run <= runs; run++) {
  for (const consumer of consumers) {
    for (const mode of modes) {
      process.stderr.write(`run ${run}/${runs}: ${consumer} / ${mode}\n`)
      const r = await runRealRollout({ registry: 'eureka-real', consumer, mode, scale })
      const killed = r.offline.filter((o) => o.killed).length
      const last = Math.max(...r.offline.map((o) => o.lastRequestAfterMs ?? 0))
      const row = `| ${run} | ${consumer} | ${mode} | ${r.total} | ${r.failed} | ${failures(r)} | ${last} | ${Math.max(...r.offline.map((o) => o.offlineMs))} | ${killed} | ${r.rolloutMs} |`
      rows.push(row)
      process.stderr.write(`${row}\n`)
      // A loss under lameduck is a finding: keep its evidence.
      if (mode === 'lameduck' && r.failed > 0) process.stderr.write(`  lameduck failures: ${JSON.stringify(r.failureSamples)}\n  markers: ${JSON.stringify(r.timeline.markers)}\n`)
      const key = `${consumer}|${mode}`
      const t = totals.get(key) ?? { lost: [], requests: 0, killed: 0 }
      t.lost.push(r.failed)
      t.requests += r.total
      t.killed += killed
      totals.set(key, t)
    }
  }
}

const p = realPeriods(scale)
const out: string[] = [
  '## Rollout lab on the real Eureka server',
  '',
  `\`test/real/rollout-table.ts\` (${runs} runs; \`node --conditions=@lameduck/source test/real/rollout-table.ts ${runs}\`). ${new Date().toISOString().slice(0, 10)}, Node ${process.version}.`,
  `The real Netflix Eureka server (test/real/eureka-server) with every period × ${scale} through its own properties: read-only cache ${p.cacheMs} ms,`,
  `consumer registry fetch ${p.fetchSeconds} s, Spring Cloud LoadBalancer cache TTL ${p.lbTtlMs} ms, heartbeats ${p.heartbeatMs} ms. 3 providers (the devkit lab's`,
  'provider app) rolled v1 → v2 (maxSurge 1, maxUnavailable 0) under load; naive = deregister and exit on SIGTERM, lameduck = `lameduck prestop`.',
  '',
  '| consumer | mode | runs | requests lost per run | requests in all | SIGKILLed pods |',
  '|---|---|---:|---|---:|---:|'
]
for (const consumer of consumers) {
  for (const mode of modes) {
    const t = totals.get(`${consumer}|${mode}`)!
    out.push(`| ${CONSUMER[consumer]} | ${mode} | ${t.lost.length} | ${t.lost.join(', ')} | ${t.requests} | ${t.killed} |`)
  }
}
out.push('', 'Every run (ms; "last request" = the latest a deleted pod still served, after its deletion):', '',
  '| run | consumer | mode | requests | lost | how | last request after deletion | deletion → exit (max) | SIGKILLed | rollout |',
  '|---:|---|---|---:|---:|---|---:|---:|---:|---:|', ...rows)
process.stdout.write(`${out.join('\n')}\n`)
