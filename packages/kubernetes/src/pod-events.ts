// Kubernetes Events on this pod for each step of a drain a platform team looks for in
// `kubectl describe pod` and `kubectl get events`: the offline sequence started (Normal), the
// registry confirmed the deregistration (Normal) or never did (Warning), the drain is done
// (Normal), a bound cut it (Warning). Needs `create` on `events` in the pod's namespace; a
// denial is said once, with the fix, and no further event is tried.
import { hostname } from 'node:os'
import { InvalidOptionError, duration, record, show, type LifecycleEvents, type LifecycleObserver, type ObserverContext, type Logger, type OfflineReport } from '@lameduck/core'
import { connect } from './connect.ts'
import { KubernetesApiError, KubernetesConfigError } from './errors.ts'
import { ApiClient } from './api-client.ts'
import { dnsLabel, type KubeconfigOption } from './options.ts'

export interface PodEventsOptions {
  /** This pod's name. Default: $POD_NAME, else the host name (a pod's host name is its name). */
  pod?: string
  /** Default: the pod's own namespace in-cluster, the kubeconfig context's, else 'default'. */
  namespace?: string
  kubeconfig?: string | KubeconfigOption
  inCluster?: boolean
  /** Bound on each POST. Default 5 000: an event is worth little after that. */
  requestTimeoutMs?: number
}

export type PodEventType = 'Normal' | 'Warning'
export interface PodEvent { type: PodEventType, reason: string, message: string }

const KNOWN = ['pod', 'namespace', 'kubeconfig', 'inCluster', 'requestTimeoutMs']
/** The API server keeps at most 1 KiB of an event's message (events.k8s.io `note`). */
const MAX_MESSAGE = 1_024
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`

/** The events a drain's report stands for: how it ended, and what to look at. */
export function reportEvents (report: OfflineReport): PodEvent[] {
  const out: PodEvent[] = []
  const d = report.deregistration
  if (d.state === 'unconfirmed') {
    out.push({ type: 'Warning', reason: 'DeregistrationUnconfirmed', message: `the registry never confirmed the deregistration (${d.attempts} attempt(s)${d.lastError === null ? '' : `, last error: ${d.lastError}`}): consumers may still route to this pod` })
  }
  if (report.outcome === 'cut') {
    out.push({ type: 'Warning', reason: 'DrainCut', message: `the drain was cut short (${report.reason}) after ${seconds(report.totalMs)}; ${report.inflightAtEnd} request(s) in flight` })
  } else if (report.inflightAtEnd > 0) {
    out.push({ type: 'Warning', reason: 'DrainCut', message: `maxRequestMs reached with ${report.inflightAtEnd} request(s) still in flight after ${seconds(report.totalMs)}: they were not waited for` })
  } else if (report.outcome === 'offline') {
    const window = report.endedEarly ? `window ended early after ${seconds(report.windowMs)} (every consumer was told)` : `window ${seconds(report.windowMs)}`
    out.push({ type: 'Normal', reason: 'Drained', message: `offline in ${seconds(report.totalMs)} (${report.reason}): ${window}, sidecar ${seconds(report.sidecarMs)}, in-flight wait ${seconds(report.inflightWaitMs)}, ${report.requestsWhileDraining} request(s) served while draining` })
  } else if (report.outcome === 'cancelled') {
    out.push({ type: 'Normal', reason: 'OfflineCancelled', message: `the offline sequence was cancelled after ${seconds(report.totalMs)} (${report.reason}): serving again` })
  }
  return out
}

/**
 * The `observers` entry that records a drain as Events on this pod. Best effort: a POST that
 * fails is logged (once per kind of failure), never retried, and never holds the drain up.
 */
export class PodEvents implements LifecycleObserver {
  readonly name = 'pod events'
  readonly pod: string
  readonly namespace: string
  readonly #poster: ApiClient | null
  readonly #configError: string | null = null
  readonly #pending = new Set<Promise<void>>()
  readonly #warned = new Set<string>()
  #denied = false
  #log: Logger | null = null
  /** Every event sent and accepted, in order (what the API server has). */
  readonly sent: PodEvent[] = []
  /** POSTs tried, accepted or not. */
  attempts = 0

  constructor (options: PodEventsOptions = {}) {
    const o = record('podEvents(options)', options, "{ namespace: 'shop' }") as PodEventsOptions
    for (const key of Object.keys(o)) if (!KNOWN.includes(key)) throw new InvalidOptionError(key, `unknown option; known options are ${KNOWN.join(', ')}`)
    const timeoutMs = duration('requestTimeoutMs', o.requestTimeoutMs, 5_000, { positive: true })
    this.pod = o.pod ?? process.env.POD_NAME ?? hostname()
    if (typeof this.pod !== 'string' || !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(this.pod)) throw new InvalidOptionError('pod', `must be the pod's name, got ${show(this.pod)}`)
    let poster: ApiClient | null = null
    let namespace = o.namespace === undefined ? undefined : dnsLabel('namespace', o.namespace)
    try {
      const conn = connect(o as { kubeconfig?: unknown, inCluster?: unknown })
      namespace ??= conn.namespace ?? 'default'
      // An Event is small: a 64 KiB answer is plenty (the rest is refused, not buffered).
      poster = new ApiClient(conn, { requestTimeoutMs: timeoutMs, maxEventBytes: 16 * 1024 })
    } catch (err) {
      // Not in a pod and no kubeconfig: nowhere to record. Bad options still throw.
      if (!(err instanceof KubernetesConfigError)) throw err
      this.#configError = err.message
    }
    this.namespace = namespace ?? 'default'
    this.#poster = poster
  }

  attach ({ lifecycle, logger }: ObserverContext): () => Promise<void> {
    this.#log = logger
    if (this.#configError !== null) logger.warn({ lameduck: { observer: this.name } }, `lameduck: pod events off: ${this.#configError}`)
    const state: (...a: LifecycleEvents['state']) => void = (change) => {
      if (change.to === 'draining') this.record({ type: 'Normal', reason: 'OfflineStarted', message: `offline sequence started (${change.reason}): deregistering, then serving through the ${seconds(lifecycle.window.totalMs)} window` })
    }
    const phase: (...a: LifecycleEvents['phase']) => void = (change) => {
      if (change.phase !== 'window' || change.previous !== 'deregistering' || change.reason !== 'deregistration confirmed') return
      const attempts = lifecycle.drain?.deregistration.attempts ?? 1
      this.record({ type: 'Normal', reason: 'Deregistered', message: `the registry confirmed the deregistration (${attempts} attempt(s)); the ${seconds(lifecycle.window.totalMs)} window starts` })
    }
    const offline: (...a: LifecycleEvents['offline']) => void = (report) => { for (const e of reportEvents(report)) this.record(e) }
    lifecycle.on('state', state)
    lifecycle.on('phase', phase)
    lifecycle.on('offline', offline)
    return async () => {
      lifecycle.off('state', state)
      lifecycle.off('phase', phase)
      lifecycle.off('offline', offline)
      // The last events (Drained) are on their way: each POST is bounded by requestTimeoutMs.
      await this.idle()
      this.#poster?.close()
    }
  }

  /** Resolves once every event sent so far was answered (or failed). */
  async idle (): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending])
  }

  /** Sends one event on this pod, in the background. */
  record (event: PodEvent): void {
    if (this.#poster === null || this.#denied) return
    this.attempts++
    const p = this.#send(this.#poster, event).finally(() => { this.#pending.delete(p) })
    this.#pending.add(p)
  }

  async #send (poster: ApiClient, event: PodEvent): Promise<void> {
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z')
    const body = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { generateName: `${this.pod.slice(0, 240)}.`, namespace: this.namespace },
      involvedObject: { apiVersion: 'v1', kind: 'Pod', name: this.pod, namespace: this.namespace, ...(process.env.POD_UID === undefined ? {} : { uid: process.env.POD_UID }) },
      type: event.type,
      reason: event.reason,
      message: `lameduck: ${event.message}`.slice(0, MAX_MESSAGE),
      source: { component: 'lameduck', ...(process.env.NODE_NAME === undefined ? {} : { host: process.env.NODE_NAME }) },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1
    }
    try {
      await poster.postJson(`/api/v1/namespaces/${encodeURIComponent(this.namespace)}/events`, body, `create an event on pod '${this.pod}' in '${this.namespace}'`)
      this.sent.push(event)
    } catch (err) {
      this.#failed(err as Error)
    }
  }

  #failed (err: Error): void {
    const forbidden = err instanceof KubernetesApiError && err.status === 403
    if (forbidden) this.#denied = true
    const kind = err instanceof KubernetesApiError ? String(err.status) : (err as { code?: string }).code ?? err.name
    if (this.#warned.has(kind)) { this.#log?.debug({ err }, `lameduck: pod event not recorded: ${err.message}`); return }
    this.#warned.add(kind)
    const fix = forbidden ? ": the pod's service account needs a Role with `create` on `events` in its namespace; no more pod events are tried" : ' (best effort: not retried)'
    this.#log?.warn({ err, lameduck: { observer: this.name } }, `lameduck: cannot record pod events${fix}: ${err.message}`)
  }
}

/** Events on this pod for each drain (offline started, deregistered or not, drained, cut). */
export function podEvents (options?: PodEventsOptions): PodEvents {
  return new PodEvents(options)
}
