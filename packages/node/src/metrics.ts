import { InvalidOptionError, STATES, type Lifecycle, type LifecycleEvents, type OfflineReport } from '@lameduck/core'
import type { ConnectionStats } from './connections.ts'
import type { PromRegistryLike } from './options.ts'

type Labels = Record<string, string>
type Sample = [Labels, number]

/** One metric: Prometheus conventions (counters end in `_total`, durations in `_seconds`). */
interface MetricDef { name: string, help: string, type: 'gauge' | 'counter', labels: string[], samples: () => Sample[] }

export interface MetricsContext {
  lifecycle: Lifecycle
  connections: () => ConnectionStats
  maxRequestMs: number
}

const OUTCOMES = ['offline', 'cancelled', 'skipped'] as const

/** The offline-duration histogram: seconds, from an early-ended drain to a 90 s window plus a slow request. */
const DURATION_NAME = 'lameduck_offline_duration_seconds'
const DURATION_HELP = 'Duration of each offline sequence (deregistration, window, sidecar, in-flight wait), by outcome.'
export const DURATION_BUCKETS = [0.5, 1, 2.5, 5, 10, 15, 30, 45, 60, 90, 120, 180, 300] as const

/** One outcome's histogram: cumulative bucket counts, sum and count. */
interface Histogram { buckets: number[], sum: number, count: number }

/**
 * lameduck's metrics, one table for both outputs: the text exposition served
 * at `/metrics`, and prom-client metrics in a user's Registry (whose collect()
 * reads the same table at scrape time). Counts what happened to each offline
 * sequence, for alerts on cut drains and unconfirmed deregistrations.
 */
export class Metrics {
  readonly #defs: MetricDef[]
  readonly #offline = new Map<string, number>(OUTCOMES.map((o) => [o, 0]))
  readonly #durations = new Map<string, Histogram>()
  #observe: ((outcome: string, seconds: number) => void) | null = null
  #cut = 0
  #unconfirmed = 0
  #registered: { registry: PromRegistryLike, names: string[] } | null = null
  readonly #onOffline: (...args: LifecycleEvents['offline']) => void

  constructor (ctx: MetricsContext) {
    this.#defs = definitions(ctx, () => ({ offline: this.#offline, cut: this.#cut, unconfirmed: this.#unconfirmed }))
    this.#onOffline = (report) => { this.#count(report) }
    ctx.lifecycle.on('offline', this.#onOffline)
    this.detach = () => { ctx.lifecycle.off('offline', this.#onOffline); this.#unregister() }
  }

  /** Stops counting and removes the metrics from a prom-client registry. */
  readonly detach: () => void

  #count (report: OfflineReport): void {
    this.#offline.set(report.outcome, (this.#offline.get(report.outcome) ?? 0) + 1)
    const seconds = report.totalMs / 1000
    const h = this.#durations.get(report.outcome) ?? { buckets: DURATION_BUCKETS.map(() => 0), sum: 0, count: 0 }
    DURATION_BUCKETS.forEach((le, i) => { if (seconds <= le) h.buckets[i]!++ })
    h.sum += seconds
    h.count++
    this.#durations.set(report.outcome, h)
    this.#observe?.(report.outcome, seconds)
    if (report.outcome !== 'offline') return
    if (report.inflightAtEnd > 0) this.#cut++
    // The core's explicit field when it has one; else a drain that never saw its deregistration confirmed.
    const state = deregistrationState(report)
    if (state === 'unconfirmed' || (state === undefined && report.deregisteredAt === null && report.windowMs > 0)) this.#unconfirmed++
  }

  /** The Prometheus text exposition format (version 0.0.4). */
  render (): string {
    const lines: string[] = []
    for (const def of this.#defs) {
      lines.push(`# HELP ${def.name} ${def.help}`, `# TYPE ${def.name} ${def.type}`)
      for (const [labels, value] of def.samples()) lines.push(`${def.name}${labelText(labels)} ${value}`)
    }
    lines.push(`# HELP ${DURATION_NAME} ${DURATION_HELP}`, `# TYPE ${DURATION_NAME} histogram`)
    for (const [outcome, h] of this.#durations) {
      DURATION_BUCKETS.forEach((le, i) => { lines.push(`${DURATION_NAME}_bucket${labelText({ outcome, le: String(le) })} ${h.buckets[i]!}`) })
      lines.push(`${DURATION_NAME}_bucket${labelText({ outcome, le: '+Inf' })} ${h.count}`, `${DURATION_NAME}_sum${labelText({ outcome })} ${h.sum}`, `${DURATION_NAME}_count${labelText({ outcome })} ${h.count}`)
    }
    return lines.join('\n') + '\n'
  }

  /** Registers every metric into a prom-client Registry; they read lameduck's state at each scrape. */
  async register (registry: PromRegistryLike): Promise<void> {
    let prom: typeof import('prom-client')
    try {
      prom = await import('prom-client')
    } catch (err) {
      throw new InvalidOptionError('metrics.registry', 'needs the prom-client package: npm install prom-client', { cause: err })
    }
    const taken = [...this.#defs.map((d) => d.name), DURATION_NAME].find((name) => registry.getSingleMetric(name) !== undefined)
    if (taken !== undefined) throw new InvalidOptionError('metrics.registry', `already has a metric named ${taken} (a second attach() on the same registry?); use one registry per lameduck instance`)
    for (const def of this.#defs) {
      const common = { name: def.name, help: def.help, labelNames: def.labels, registers: [registry as never] }
      if (def.type === 'gauge') {
        // eslint-disable-next-line no-new
        new prom.Gauge({ ...common, collect () { for (const [labels, value] of def.samples()) this.set(labels, value) } })
      } else {
        // eslint-disable-next-line no-new
        new prom.Counter({ ...common, collect () { this.reset(); for (const [labels, value] of def.samples()) this.inc(labels, value) } })
      }
    }
    const histogram = new prom.Histogram({ name: DURATION_NAME, help: DURATION_HELP, labelNames: ['outcome'], buckets: [...DURATION_BUCKETS], registers: [registry as never] })
    // Sequences before registration (rare: registration happens at attach), then each one as it ends.
    for (const [outcome, h] of this.#durations) if (h.count > 0) histogram.observe({ outcome }, h.sum / h.count)
    this.#observe = (outcome, seconds) => { histogram.observe({ outcome }, seconds) }
    this.#registered = { registry, names: [...this.#defs.map((d) => d.name), DURATION_NAME] }
  }

  #unregister (): void {
    if (this.#registered === null) return
    const { registry, names } = this.#registered
    const remove = (registry as { removeSingleMetric?: (name: string) => void }).removeSingleMetric
    for (const name of names) remove?.call(registry, name)
    this.#registered = null
    this.#observe = null
  }
}

function definitions (ctx: MetricsContext, counts: () => { offline: Map<string, number>, cut: number, unconfirmed: number }): MetricDef[] {
  const { lifecycle } = ctx
  const one = (value: number): Sample[] => [[{}, value]]
  const gauge = (name: string, help: string, value: () => number): MetricDef => ({ name, help, type: 'gauge', labels: [], samples: () => one(value()) })
  const counter = (name: string, help: string, value: () => number): MetricDef => ({ name, help, type: 'counter', labels: [], samples: () => one(value()) })
  return [
    { name: 'lameduck_state', help: 'Lifecycle state: 1 for the current one.', type: 'gauge', labels: ['state'], samples: () => STATES.map((s) => [{ state: s }, s === lifecycle.state ? 1 : 0]) },
    gauge('lameduck_warming', '1 while serving and younger than the warmup.', () => lifecycle.warming ? 1 : 0),
    gauge('lameduck_inflight_requests', 'Requests being served now.', () => lifecycle.inflight.count),
    counter('lameduck_requests_total', 'Requests received since start.', () => lifecycle.inflight.total),
    gauge('lameduck_open_connections', 'Open connections on the application listener.', () => ctx.connections().open),
    gauge('lameduck_upgraded_connections', 'Upgraded connections (WebSocket) open on the application listener.', () => ctx.connections().upgraded),
    gauge('lameduck_window_seconds', 'The computed propagation window.', () => lifecycle.window.totalMs / 1000),
    gauge('lameduck_max_request_seconds', 'The bound on the in-flight wait after the window (maxRequestMs).', () => ctx.maxRequestMs / 1000),
    gauge('lameduck_draining_seconds', 'Time since the running drain started; 0 when not draining.', () => {
      const drain = lifecycle.state === 'draining' ? lifecycle.drain : null
      return drain === null ? 0 : Math.max(0, lifecycle.clock.now() - drain.startedAt) / 1000
    }),
    gauge('lameduck_requests_while_draining', 'Requests served during the current or last drain.', () => lifecycle.drain?.requestsWhileDraining ?? lifecycle.lastReport?.requestsWhileDraining ?? 0),
    gauge('lameduck_drain_duration_seconds', 'Duration of the last completed offline sequence (deregistration, window, sidecar, in-flight wait).', () => (lifecycle.lastReport?.totalMs ?? 0) / 1000),
    counter('lameduck_connections_closed_while_draining_total', 'Connections closed during drains.', () => ctx.connections().closedWhileDraining),
    { name: 'lameduck_offline_total', help: 'Offline sequences ended, by outcome.', type: 'counter', labels: ['outcome'], samples: () => [...counts().offline].map(([outcome, n]) => [{ outcome }, n]) },
    counter('lameduck_drains_cut_total', 'Drains that reached maxRequestMs with requests still in flight.', () => counts().cut),
    counter('lameduck_deregistrations_unconfirmed_total', 'Drains that ended without a confirmed deregistration (the registry may still list this instance).', () => counts().unconfirmed)
  ]
}

/** `report.deregistration`'s state, whether a string or `{ state }` (undefined on cores without it). */
export function deregistrationState (report: unknown): string | undefined {
  const d = (report as { deregistration?: string | { state?: string } } | null)?.deregistration
  return typeof d === 'string' ? d : d?.state
}

function labelText (labels: Labels): string {
  const entries = Object.entries(labels)
  if (entries.length === 0) return ''
  return `{${entries.map(([k, v]) => `${k}="${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`).join(',')}}`
}
