// The provider's side: watch this pod's own endpoint in its namespace's EndpointSlices and say
// when the control plane has marked it terminating (or removed it), so the drain can count the
// endpoint-propagation term from evidence instead of a fixed guess. Without API access it says
// so once ('unavailable') and the caller keeps its preset.
import { hostname } from 'node:os'
import { Emitter, InvalidOptionError, record, show } from '@lameduck/core'
import { ApiClient } from './api-client.ts'
import { connect } from './connect.ts'
import type { ParsedSlice } from './endpoint-slices.ts'
import { KubernetesApiError } from './errors.ts'
import { dnsLabel, resolveOptions, type KubernetesDiscoveryOptions } from './options.ts'
import { SliceWatch, type SliceWatchStats } from './slice-watch.ts'

export type OwnEndpointState = 'unknown' | 'ready' | 'not-ready' | 'terminating' | 'removed'

export interface OwnEndpointChange {
  state: OwnEndpointState
  previous: OwnEndpointState
  /** ms epoch on this process's clock when the change was seen. */
  at: number
  /** What showed it: `EndpointSlice 'orders-x2v' lists 10.0.0.7 terminating`. */
  evidence: string
}

export interface OwnEndpointOptions extends Pick<KubernetesDiscoveryOptions, 'namespace' | 'kubeconfig' | 'inCluster' | 'resyncMs' | 'watchTimeoutMs' | 'watchGraceMs' | 'requestTimeoutMs' | 'maxEventBytes' | 'maxEndpoints' | 'backoff' | 'logger' | 'clock'> {
  /** This pod's name. Default: $POD_NAME, else the host name (a pod's host name is its name). */
  pod?: string
  /** This pod's IP, matched when a slice's endpoint has no targetRef. Default: $POD_IP. */
  podIP?: string
  /** Only this Service's slices. Default: every slice of the namespace. */
  service?: string
}

export interface OwnEndpointEvents {
  change: [OwnEndpointChange]
  /** The first time the endpoint is seen terminating or removed after it was seen at all. */
  leaving: [OwnEndpointChange]
  /** The API cannot be watched (RBAC, credentials): said once; fall back to the preset. */
  unavailable: [Error]
  /** The watch fails (once per kind of failure until it works again): the state may be stale. */
  failing: [unknown]
  /** The watch works again after a failure. */
  recovered: []
}

export class OwnEndpointObserver extends Emitter<OwnEndpointEvents> {
  readonly pod: string
  readonly podIP: string | undefined
  readonly #watch: SliceWatch
  readonly #api: ApiClient
  readonly #clock: { now: () => number }
  #state: OwnEndpointState = 'unknown'
  #seen = false
  #left = false
  #unavailableSaid = false

  constructor (options: OwnEndpointOptions = {}) {
    super()
    const o = record('ownEndpoint(options)', options, "{ service: 'orders' }") as OwnEndpointOptions
    const { pod, podIP, service, ...rest } = o
    const conn = connect(rest as { kubeconfig?: unknown, inCluster?: unknown })
    // The discovery's kit checks the shared options (and refuses unknown keys).
    const resolved = resolveOptions(rest, conn.namespace)
    this.pod = pod ?? process.env.POD_NAME ?? hostname()
    if (typeof this.pod !== 'string' || this.pod === '') throw new InvalidOptionError('pod', `must be the pod's name, got ${show(pod)}`)
    this.podIP = podIP ?? process.env.POD_IP
    this.#clock = resolved.clock
    this.#api = new ApiClient(conn, resolved)
    const selector = service === undefined ? undefined : `kubernetes.io/service-name=${dnsLabel('service', service)}`
    this.#watch = new SliceWatch(`pod '${this.pod}'`, selector, { ...resolved, port: null }, this.#api, {
      onChange: (slices) => this.#update(slices),
      onFailure: (err, first) => this.#failed(err, first),
      onRecovered: () => this.emit('recovered')
    })
  }

  get state (): OwnEndpointState { return this.#state }
  get stats (): SliceWatchStats { return { ...this.#watch.stats } }

  close (): void {
    this.#watch.close()
    this.#api.close()
  }

  #update (slices: ReadonlyMap<string, ParsedSlice>): void {
    let next: OwnEndpointState = this.#seen ? 'removed' : 'unknown'
    let evidence = this.#seen ? `no EndpointSlice lists pod '${this.pod}' any more` : ''
    for (const slice of slices.values()) {
      for (const e of slice.endpoints) {
        if (e.pod !== this.pod && !(e.pod === undefined && e.address === this.podIP)) continue
        // Terminating anywhere wins: the control plane has begun taking it out.
        const state: OwnEndpointState = e.terminating ? 'terminating' : e.ready ? 'ready' : 'not-ready'
        if (next === 'terminating') continue
        if (state === 'terminating' || next === 'unknown' || next === 'removed' || state === 'ready') {
          next = state
          evidence = `EndpointSlice '${slice.name}' lists ${e.address} ${state}`
        }
      }
    }
    if (next !== 'unknown' && next !== 'removed') this.#seen = true
    if (next === this.#state) return
    const change: OwnEndpointChange = { state: next, previous: this.#state, at: this.#clock.now(), evidence }
    this.#state = next
    this.emit('change', change)
    if ((next === 'terminating' || next === 'removed') && !this.#left) {
      this.#left = true
      this.emit('leaving', change)
    }
  }

  #failed (err: unknown, first: boolean): void {
    if (first) this.emit('failing', err)
    const denied = err instanceof KubernetesApiError && (err.status === 401 || err.status === 403)
    if (denied && !this.#unavailableSaid) {
      this.#unavailableSaid = true
      this.emit('unavailable', err)
    } else if (first) {
      this.#watch.warn(`watching pod '${this.pod}''s endpoint failed (${err instanceof Error ? err.message : String(err)}); retrying`)
    }
  }
}

/** Watches this pod's own endpoint. Throws KubernetesConfigError when there is no API access configured. */
export function ownEndpointObserver (options?: OwnEndpointOptions): OwnEndpointObserver {
  return new OwnEndpointObserver(options)
}
