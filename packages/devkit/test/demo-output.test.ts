// What `npm start` prints: a table that fits a terminal, and preStop lines as a manifest has
// them (`lameduck prestop --admin <the pod's URL>`), not the node binary, the CLI's source
// path and an unfilled `{admin}` placeholder.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { cellsTable, type DemoCell } from '../src/rollout/demo-table.ts'
import type { RolloutReport } from '../src/rollout/report.ts'
import { shownPreStop } from '../src/rollout/rollout.ts'

function report (failed: number, total: number): RolloutReport {
  return {
    failed,
    total,
    failures: { refused: failed - 11, noInstance: 0, reset: 2, status5xx: 9, timeout: 0, other: 0 },
    eventLoopLag: { consumer: { p99Ms: 22 }, providers: { p99Ms: 36 } },
    offline: [{ killed: false }, { killed: false }, { killed: false }],
    rolloutMs: 6_712
  } as unknown as RolloutReport
}

test('the demo\'s terminal table fits in 100 columns and still names every failure kind', () => {
  const cells: DemoCell[] = [
    { consumer: 'plain', mode: 'naive', reports: [report(515, 1717), report(508, 1700), report(577, 1720)] },
    { consumer: 'plain', mode: 'lameduck', reports: [report(11, 2907)] },
    { consumer: 'balancer', mode: 'naive', reports: [report(60, 2064), report(13, 2000)] },
    { consumer: 'balancer', mode: 'lameduck', reports: [report(11, 3399)] }
  ]
  const table = cellsTable(cells)
  const widest = Math.max(...table.split('\n').map((l) => l.length))
  assert.ok(widest <= 100, `${widest} columns:\n${table}`)
  assert.match(table, /^plain +│ naive +│ +515 \(508–577\) │/m)
  assert.match(table, /plain × naive: refused 504, reset 2, status5xx 9/)
})

test('a pod\'s preStop is logged as `lameduck prestop --admin URL`', () => {
  const cli = fileURLToPath(import.meta.resolve('@lameduck/cli/bin'))
  const preStop = [process.execPath, '--conditions=@lameduck/source', cli, 'prestop', '--admin', '{admin}']
  assert.equal(shownPreStop(preStop, 'http://127.0.0.1:40123'), 'lameduck prestop --admin http://127.0.0.1:40123')
  assert.equal(shownPreStop(['sleep', '1.5'], 'http://127.0.0.1:40123'), 'sleep 1.5')
})
