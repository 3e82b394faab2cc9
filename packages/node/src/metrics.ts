import { STATES, type Lifecycle } from '@lameduck/core'
import type { ConnectionStats } from './connections.ts'

/** Prometheus text exposition of the lifecycle. */
export function renderMetrics (lifecycle: Lifecycle, connections: ConnectionStats): string {
  const s = lifecycle.state
  const drain = lifecycle.drain
  const last = lifecycle.lastReport
  const lines: string[] = [
    '# HELP lameduck_state Lifecycle state: 1 for the current one.',
    '# TYPE lameduck_state gauge',
    ...STATES.map((state) => `lameduck_state{state="${state}"} ${state === s ? 1 : 0}`),
    '# HELP lameduck_warming 1 while serving and younger than the warmup.',
    '# TYPE lameduck_warming gauge',
    `lameduck_warming ${lifecycle.warming ? 1 : 0}`,
    '# HELP lameduck_inflight_requests Requests being served now.',
    '# TYPE lameduck_inflight_requests gauge',
    `lameduck_inflight_requests ${lifecycle.inflight.count}`,
    '# HELP lameduck_requests_total Requests received since start.',
    '# TYPE lameduck_requests_total counter',
    `lameduck_requests_total ${lifecycle.inflight.total}`,
    '# HELP lameduck_open_connections Open connections on the application listener.',
    '# TYPE lameduck_open_connections gauge',
    `lameduck_open_connections ${connections.open}`,
    '# HELP lameduck_upgraded_connections Upgraded connections (WebSocket) open on the application listener.',
    '# TYPE lameduck_upgraded_connections gauge',
    `lameduck_upgraded_connections ${connections.upgraded}`,
    '# HELP lameduck_window_seconds The computed propagation window.',
    '# TYPE lameduck_window_seconds gauge',
    `lameduck_window_seconds ${lifecycle.window.totalMs / 1000}`,
    '# HELP lameduck_requests_while_draining Requests served during the current or last drain.',
    '# TYPE lameduck_requests_while_draining gauge',
    `lameduck_requests_while_draining ${drain?.requestsWhileDraining ?? last?.requestsWhileDraining ?? 0}`,
    '# HELP lameduck_drain_duration_seconds Duration of the last completed offline sequence.',
    '# TYPE lameduck_drain_duration_seconds gauge',
    `lameduck_drain_duration_seconds ${last ? last.totalMs / 1000 : 0}`,
    '# HELP lameduck_connections_closed_while_draining Connections closed during drains.',
    '# TYPE lameduck_connections_closed_while_draining counter',
    `lameduck_connections_closed_while_draining ${connections.closedWhileDraining}`
  ]
  return lines.join('\n') + '\n'
}
