// The engine's overhead with the OpenTelemetry SDK installed (issue 29): the same hello-world
// servers and rounds as overhead.ts, both sides with the SDK registered globally (otel-sdk.ts), one
// without attach() and one with it (its OpenTelemetry observer on, reading that SDK). lameduck
// touches no instrument per request: its gauges are read when the SDK collects.
//   node --conditions=@lameduck/source packages/node/bench/otel-overhead.ts [--rounds 5] [--seconds 3]
import { parseArgs } from 'node:util'
import { median, pinned, rounds, type Round } from './overhead.ts'
import type { ServerKind } from './servers.ts'
import { spawnSync } from 'node:child_process'
import { cpus } from 'node:os'

const KINDS: ServerKind[] = ['node-http', 'express']
const LABEL: Partial<Record<ServerKind, string>> = { 'node-http': 'node:http (HTTP/1.1) + OTel SDK', express: 'Express 5 (HTTP/1.1) + OTel SDK' }

export async function benchOtelOverhead (n = 5, seconds = 3): Promise<{ table: string, setup: string, ratios: Record<string, { cpu: number, rps: number }> }> {
  if (pinned) spawnSync('taskset', ['-apc', '0', String(process.pid)])
  const rows: string[] = []
  const ratios: Record<string, { cpu: number, rps: number }> = {}
  try {
    for (const kind of KINDS) {
      const { bare, attached } = await rounds(kind, n, seconds, ['bare-otel', 'attach-otel'])
      const cpu = median(bare.map((b, i) => b.cpuPerRequest / attached[i]!.cpuPerRequest))
      const rps = median(bare.map((b, i) => attached[i]!.rps / b.rps))
      ratios[kind] = { cpu, rps }
      const med = (xs: Round[], k: keyof Round): number => median(xs.map((x) => x[k]))
      rows.push(`| ${LABEL[kind]!} | ${med(bare, 'cpuPerRequest').toFixed(1)} | ${med(attached, 'cpuPerRequest').toFixed(1)} | **${cpu.toFixed(3)}** | ${Math.round(med(bare, 'rps'))} | ${Math.round(med(attached, 'rps'))} | **${rps.toFixed(3)}** |`)
    }
  } finally {
    if (pinned) spawnSync('taskset', ['-apc', `0-${cpus().length - 1}`, String(process.pid)])
  }
  return {
    ratios,
    setup: `Both sides with the OpenTelemetry JS SDK registered (TracerProvider + BatchSpanProcessor, MeterProvider collecting every 1 s, a sink exporter); ${n} rounds of ${seconds} s per side, alternating; medians of per-round ratios; goal ≥ 0.98.`,
    table: [
      '| hello world | server CPU µs/request, SDK only | SDK + attach() | **CPU ratio** | req/s, SDK only | SDK + attach() | **req/s ratio** |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...rows
    ].join('\n')
  }
}

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, seconds: { type: 'string', default: '3' } }, strict: false })
if (import.meta.main) {
  const r = await benchOtelOverhead(Number(values.rounds), Number(values.seconds))
  console.log(`${r.setup}\n\n${r.table}`)
}
