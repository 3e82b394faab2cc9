// The admin endpoints and Envoy's dispatch rules (admin.cc): exact path match on the part
// before `?`, 405 `Method X not allowed, POST required.` for a mutating handler called
// without POST, 404 `invalid path. ` + the help text for anything unknown.
import type { EnvoyServerState } from '@lameduck/envoy'
import { parseQuery, renderStats, type AdminReply } from './stats-render.ts'
import type { StatStore } from './stats-store.ts'

export type { AdminReply }

export interface AdminTarget {
  serverState(): EnvoyServerState
  store: StatStore
  promBlankLineBetweenFamilies: boolean
  setHealthCheckFailed(failed: boolean): void
  drainListeners(flags: { inboundOnly: boolean, graceful: boolean, skipExit: boolean }): AdminReply
  /** Runs after the response went out. */
  quit(): void
  serverInfo(): object
  listeners(): Array<{ name: string, address: string, port: number }>
}

interface Handler {
  path: string
  help: string
  mutates: boolean
  params?: ReadonlyArray<readonly [string, string]>
  run(target: AdminTarget, query: Map<string, string>): AdminReply & { after?: () => void }
}

const OK = { status: 200, body: 'OK\n' }

// Help strings as Envoy prints them; the drain_listeners parameter lines are verbatim
// from Envoy's source (fixtures/envoy_admin_misc_responses.json).
const HANDLERS: Handler[] = [
  {
    path: '/drain_listeners',
    help: 'drain listeners',
    mutates: true,
    params: [
      ['graceful', 'When draining listeners, enter a graceful drain period prior to closing listeners. This behaviour and duration is configurable via server options or CLI'],
      ['skip_exit', 'When draining listeners, do not exit after the drain period. This must be used with graceful'],
      ['inboundonly', 'Drains all inbound listeners. traffic_direction field in envoy_v3_api_msg_config.listener.v3.Listener is used to determine whether a listener is inbound or outbound.']
    ],
    run: (t, q) => t.drainListeners({ inboundOnly: q.has('inboundonly'), graceful: q.has('graceful'), skipExit: q.has('skip_exit') })
  },
  { path: '/healthcheck/fail', help: 'cause the server to fail health checks', mutates: true, run: (t) => { t.setHealthCheckFailed(true); return OK } },
  { path: '/healthcheck/ok', help: 'cause the server to pass health checks', mutates: true, run: (t) => { t.setHealthCheckFailed(false); return OK } },
  { path: '/help', help: 'print out list of admin commands', mutates: false, run: () => ({ status: 200, body: helpText() }) },
  {
    path: '/listeners',
    help: 'print listener info',
    mutates: false,
    params: [['format', 'File format to use (text, json)']],
    run: (t, q) => {
      const list = t.listeners()
      if (q.get('format') === 'json') {
        const doc = { listener_statuses: list.map((l) => ({ name: l.name, local_address: { socket_address: { address: l.address, port_value: l.port } } })) }
        return { status: 200, body: JSON.stringify(doc), contentType: 'application/json' }
      }
      return { status: 200, body: list.map((l) => `${l.name}::${l.address}:${l.port}\n`).join('') }
    }
  },
  { path: '/quitquitquit', help: 'exit the server', mutates: true, run: (t) => ({ ...OK, after: () => t.quit() }) },
  {
    path: '/ready',
    help: 'print server state, return 200 if LIVE, otherwise return 503',
    mutates: false,
    run: (t) => {
      const state = t.serverState()
      return { status: state === 'LIVE' ? 200 : 503, body: `${state}\n` }
    }
  },
  { path: '/reset_counters', help: 'reset all counters to zero', mutates: true, run: (t) => { t.store.resetCounters(); return OK } },
  {
    path: '/server_info',
    help: 'print server version/status information',
    mutates: false,
    run: (t) => ({ status: 200, body: JSON.stringify(t.serverInfo(), null, 2), contentType: 'application/json' })
  },
  {
    path: '/stats',
    help: 'print server stats',
    mutates: false,
    params: [
      ['usedonly', 'Only include stats that have been written by system since restart'],
      ['filter', 'Regular expression (Google re2) for filtering stats'],
      ['format', 'Format to use: html, active-html, text, json, prometheus'],
      ['type', 'Stat types to include: All, Counters, Gauges, Histograms, TextReadouts'],
      ['histogram_buckets', 'Histogram bucket display mode: cumulative, disjoint, detailed, none']
    ],
    run: (t, q) => renderStats(t.store, q, { blankLineBetweenFamilies: t.promBlankLineBetweenFamilies })
  },
  {
    path: '/stats/prometheus',
    help: 'print server stats in prometheus format',
    mutates: false,
    params: [
      ['usedonly', 'Only include stats that have been written by system since restart'],
      ['text_readouts', 'Render text_readouts as new gauges with value 0 (increases Prometheus data size)'],
      ['filter', 'Regular expression (Google re2) for filtering stats'],
      ['histogram_buckets', 'Histogram bucket display mode: cumulative, disjoint, detailed, none']
    ],
    run: (t, q) => renderStats(t.store, q, { prometheus: true, blankLineBetweenFamilies: t.promBlankLineBetweenFamilies })
  }
]

export function helpText (): string {
  let text = 'admin commands are:\n'
  for (const h of [...HANDLERS].sort((a, b) => a.path < b.path ? -1 : 1)) {
    text += `  ${h.path}${h.mutates ? ' (POST)' : ''}: ${h.help}\n`
    for (const [name, help] of h.params ?? []) text += `      ${name}: ${help}\n`
  }
  return text
}

export function handleAdmin (target: AdminTarget, method: string, url: string): AdminReply & { after?: () => void } {
  const q = url.indexOf('?')
  const path = q === -1 ? url : url.slice(0, q)
  const handler = HANDLERS.find((h) => h.path === path)
  if (handler === undefined) return { status: 404, body: `invalid path. ${helpText()}` }
  if (handler.mutates && method !== 'POST') return { status: 405, body: `Method ${method} not allowed, POST required.` }
  return handler.run(target, parseQuery(q === -1 ? '' : url.slice(q + 1)))
}
