// The rollout lab on the `kubernetes` path of a real control plane, repeated: one markdown table of every
// run, per consumer and mode (docs/benchmarks.md, "Rollout lab on a real Kubernetes API server").
//   node --conditions=@lameduck/source test/k8s/rollout-table.ts [runs=5]
import type { RolloutMode, RolloutReport } from '@lameduck/devkit'
import { K8S_VERSION, skipReason, startControlPlane } from './helpers/control-plane.ts'
import { runKubernetesRollout } from './rollout/run.ts'

const runs = Number(process.argv[2] ?? 5)
const reason = skipReason()
if (reason !== undefined) { console.log(`## Rollout lab on a real Kubernetes API server\n\nSkipped: ${reason}.`); process.exit(0) }

const consumers = ['balancer', 'plain'] as const
const modes: RolloutMode[] = ['lameduck', 'naive']
const CONSUMER = { balancer: '@lameduck/balancer on kubernetesDiscovery()', plain: 'round robin on kubernetesDiscovery(), keep-alive, no retries' }
const failures = (r: RolloutReport): string => Object.entries(r.failures).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(', ') || '–'
const rows: string[] = []
const totals = new Map<string, { lost: number[], requests: number, killed: number }>()
const cp = await startControlPlane()
try {
  for (let run = 1; run <= runs; run++) {
    for (const consumer of consumers) {
      for (const mode of modes) {
        process.stderr.write(`run ${run}/${runs}: ${consumer} / ${mode}\n`)
        const { report: r, stats } = await runKubernetesRollout(cp, { mode, consumer })
        const killed = r.offline.filter((o) => o.killed).length
        const last = Math.max(...r.offline.map((o) => o.lastRequestAfterMs ?? 0))
        const row = `| ${run} | ${consumer} | ${mode} | ${r.total} | ${r.failed} | ${failures(r)} | ${last} | ${Math.max(...r.offline.map((o) => o.offlineMs))} | ${killed} | ${stats.events()} | ${r.rolloutMs} |`
        rows.push(row)
        process.stderr.write(`${row}\n`)
        if (mode === 'lameduck' && r.failed > 0) process.stderr.write(`  lameduck failures: ${JSON.stringify(r.failureSamples)}\n`)
        const key = `${consumer}|${mode}`
        const t = totals.get(key) ?? { lost: [], requests: 0, killed: 0 }
        t.lost.push(r.failed)
        t.requests += r.total
        t.killed += killed
        totals.set(key, t)
      }
    }
  }
} finally {
  await cp.stop()
}

const out: string[] = [
  '## Rollout lab on a real Kubernetes API server',
  '',
  `\`test/k8s/rollout-table.ts\` (${runs} runs; \`node --conditions=@lameduck/source test/k8s/rollout-table.ts ${runs}\`). ${new Date().toISOString().slice(0, 10)}, Node ${process.version}.`,
  `A real kube-apiserver and kube-controller-manager v${K8S_VERSION} on loopback (etcd 3.4): each lab pod is mirrored as a Pod (made Ready when the lab's pod is ready,`,
  'DELETEd with a 30 s grace period when the lab deletes it), the real EndpointSlice controller writes the slices, and the consumer discovers the',
  'providers from them with `kubernetesDiscovery()` (10.x pod IPs mapped to the lab pods on loopback). 3 providers (the devkit lab\'s provider app)',
  'rolled v1 → v2 (maxSurge 1, maxUnavailable 0) under load, durations × 0.1; naive = close on SIGTERM, lameduck = `lameduck prestop`.',
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
  '| run | consumer | mode | requests | lost | how | last request after deletion | deletion → exit (max) | SIGKILLed | slice events read | rollout |',
  '|---:|---|---|---:|---:|---|---:|---:|---:|---:|---:|', ...rows)
process.stdout.write(`${out.join('\n')}\n`)
