// The observed window: core's WindowEvidence for the endpoint term, from this pod's own endpoint
// in its EndpointSlices. The term is over from the moment the endpoint is seen out of rotation
// (terminating, removed, or not ready), plus `dataPlaneLagMs` for what the API cannot show
// (kube-proxy's and an ingress controller's sync). Without API access, RBAC, or a sight of the
// pod, it reads 'unavailable' and the drain counts the preset's endpointLagMs instead.
import { duration, silentLogger, type EvidenceReading, type Logger, type WindowEvidence } from '@lameduck/core'
import { KubernetesConfigError } from './errors.ts'
import { resolveOptions } from './options.ts'
import { OwnEndpointObserver, type OwnEndpointChange, type OwnEndpointOptions, type OwnEndpointState } from './own-endpoint.ts'

export interface ObservedWindowOptions extends OwnEndpointOptions {
  /**
   * Counted after the endpoint is seen out of rotation, for the data planes' own sync: kube-proxy
   * (iptables minSyncPeriod 1 s, and iptables-restore takes seconds on a large node), an ingress
   * controller or a mesh pushing the change. Default 5000.
   */
  dataPlaneLagMs?: number
}

/** States in which no data plane that follows EndpointSlices picks the endpoint for new traffic. */
const OUT: ReadonlySet<OwnEndpointState> = new Set(['terminating', 'removed', 'not-ready'])

export class ObservedWindow implements WindowEvidence {
  readonly name = 'kubernetes endpoint'
  readonly part = 'endpointLagMs' as const
  readonly restMs: number
  readonly observer: OwnEndpointObserver | null
  readonly #log: Logger
  readonly #listeners = new Set<() => void>()
  /** Since when (and on what evidence) the endpoint has been out of rotation; null while it is in. */
  #out: OwnEndpointChange | null = null
  #configError: string | null = null
  #said = false
  #begunAt: number | null = null

  constructor (options: ObservedWindowOptions = {}) {
    const { dataPlaneLagMs, ...rest } = options ?? {}
    this.restMs = duration('dataPlaneLagMs', dataPlaneLagMs, 5_000)
    this.#log = rest.logger ?? silentLogger
    let observer: OwnEndpointObserver | null = null
    try {
      observer = new OwnEndpointObserver(rest)
    } catch (err) {
      // No API configured (not in a pod, no kubeconfig): the preset, said once. Bad options still throw.
      if (!(err instanceof KubernetesConfigError)) throw err
      // The connection failed before the other options were checked: a typo there still throws.
      const { pod: _pod, podIP: _ip, service: _service, kubeconfig: _k, inCluster: _i, ...others } = rest
      resolveOptions(others, undefined)
      this.#configError = err.message
    }
    this.observer = observer
    observer?.on('change', (c) => {
      // The earliest moment of an unbroken stretch out of rotation (not-ready -> terminating keeps it).
      if (!OUT.has(c.state)) this.#out = null
      else if (this.#out === null) this.#out = c
      this.#notify()
    })
    // A failing watch cannot show the flip: read() says 'unavailable' until it works again.
    observer?.on('failing', () => this.#notify())
    observer?.on('recovered', () => this.#notify())
    if (this.#configError !== null) this.#sayOnce(this.#configError)
  }

  begin (now: number): void {
    this.#begunAt = now
  }

  read (): EvidenceReading {
    const r = this.#reading()
    if (r.state === 'unavailable') this.#sayOnce(r.detail)
    return r
  }

  #reading (): EvidenceReading {
    const o = this.observer
    if (this.#out !== null) return { state: 'over', at: this.#out.at, detail: `${this.#out.evidence} (${this.#out.state})` }
    if (o === null) return { state: 'unavailable', detail: this.#configError ?? 'no API access' }
    const err = o.stats.lastError
    if (err !== null) return { state: 'unavailable', detail: `${err.code}: ${err.message}` }
    if (o.stats.lists === 0) return { state: 'pending', detail: 'waiting for the first list of EndpointSlices' }
    if (o.state === 'unknown') return { state: 'unavailable', detail: `no EndpointSlice in '${o.stats.namespace}' lists pod '${o.pod}'${o.podIP === undefined ? '' : ` or ${o.podIP}`} (no Service selects it, or POD_NAME/POD_IP name another pod)` }
    return { state: 'pending', detail: `pod '${o.pod}' is still ${o.state} in its EndpointSlice` }
  }

  onChange (fn: () => void): () => void {
    this.#listeners.add(fn)
    return () => { this.#listeners.delete(fn) }
  }

  describe (): Record<string, unknown> {
    const o = this.observer
    return {
      pod: o?.pod ?? null,
      podIP: o?.podIP ?? null,
      endpoint: o?.state ?? null,
      outOfRotationSince: this.#out?.at ?? null,
      dataPlaneLagMs: this.restMs,
      begunAt: this.#begunAt,
      watch: o === null ? null : { lists: o.stats.lists, events: o.stats.events, lastError: o.stats.lastError }
    }
  }

  close (): void {
    this.observer?.close()
    this.#listeners.clear()
  }

  #sayOnce (detail: string): void {
    if (this.#said) return
    this.#said = true
    this.#log.warn({ lameduck: { windowEvidence: this.name, unavailable: detail } }, `kubernetes: the observed window is unavailable (${detail}); draining counts the preset's endpointLagMs instead`)
  }

  #notify (): void {
    for (const fn of [...this.#listeners]) fn()
  }
}

/**
 * The `windowEvidence` option of attach() and the Fastify plugin: the endpoint term ends when
 * this pod's endpoint is seen out of rotation, plus dataPlaneLagMs. Needs get/list/watch on
 * endpointslices (discovery.k8s.io) in the pod's namespace; without it, the preset applies.
 */
export function observedWindow (options?: ObservedWindowOptions): ObservedWindow {
  return new ObservedWindow(options)
}
