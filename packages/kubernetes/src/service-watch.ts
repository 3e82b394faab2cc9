// One Service's instances for discovery: its EndpointSlices (label kubernetes.io/service-name)
// through a SliceWatch, turned into routable instances; subscribers hear of each change.
import { Latch, type Instance } from '@lameduck/core'
import type { ApiClient } from './api-client.ts'
import type { ParsedSlice } from './endpoint-slices.ts'
import { KubernetesApiError } from './errors.ts'
import { toInstances } from './instances.ts'
import { podRegisteredAt, REGISTERED_AT_ANNOTATION } from './pod-annotations.ts'
import type { ResolvedOptions } from './options.ts'
import { SliceWatch, type SliceWatchStats } from './slice-watch.ts'

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

export interface ServiceWatchStats extends SliceWatchStats {
  service: string
  endpoints: number
  instances: number
}

export class ServiceWatch {
  readonly service: string
  readonly #o: ResolvedOptions
  readonly #api: ApiClient
  readonly #watch: SliceWatch
  readonly #listed = new Latch()
  #instances: Instance[] = []
  #endpoints = 0
  /** When each ready endpoint was first seen ready (undefined: already ready in the first list). */
  #readySince = new Map<string, number | undefined>()
  #checkedMissing = false
  /** With podAnnotations: undefined until the first list's pods were read (the first list waits for it). */
  #registeredAt: ReadonlyMap<string, number> | undefined
  #annotationsAsked = false
  readonly #listeners = new Set<(list: Instance[]) => void>()
  readonly #abort = new AbortController()

  constructor (service: string, options: ResolvedOptions, api: ApiClient) {
    this.service = service
    this.#o = options
    this.#api = api
    this.#watch = new SliceWatch(`'${service}'`, `kubernetes.io/service-name=${service}`, options, api, {
      onChange: (slices, listed) => this.#update(slices, listed),
      onFailure: (err, first) => this.#failed(err, first)
    })
  }

  get instances (): Instance[] { return this.#instances }

  get stats (): ServiceWatchStats {
    const s = this.#watch.stats
    return { service: this.service, ...s, lastError: s.lastError === null ? null : { ...s.lastError }, endpoints: this.#endpoints, instances: this.#instances.length }
  }

  subscribe (fn: (list: Instance[]) => void): () => void {
    this.#listeners.add(fn)
    return () => { this.#listeners.delete(fn) }
  }

  /** Resolves after the first successful list. */
  ready (signal?: AbortSignal): Promise<void> {
    return this.#listed.wait(signal)
  }

  close (): void {
    this.#watch.close()
    this.#abort.abort()
    this.#listeners.clear()
  }

  /** Rebuilds the instance list from the slices; tells subscribers when it changed. */
  #update (slices: ReadonlyMap<string, ParsedSlice>, listed: boolean): void {
    if (this.#o.podAnnotations && this.#registeredAt === undefined) {
      if (listed && !this.#annotationsAsked) this.#readAnnotations()
      return
    }
    const { instances, endpoints, readySince } = toInstances(this.service, slices.values(), this.#readySince, {
      now: this.#o.clock.now(),
      initial: !this.#listed.isOpen,
      warmupMs: this.#o.warmupMs,
      maxEndpoints: this.#o.maxEndpoints,
      namespace: this.#o.namespace,
      registeredAt: this.#registeredAt
    })
    this.#readySince = readySince
    this.#endpoints = endpoints
    if (listed) {
      this.#listed.open()
      if (slices.size === 0) this.#checkService().catch(() => {})
      else this.#checkedMissing = false
    }
    if (sameRegistrations(instances, this.#instances)) return
    this.#instances = instances
    for (const fn of [...this.#listeners]) {
      try { fn(instances.map((i) => ({ ...i, metadata: { ...i.metadata } }))) } catch (err) { this.#o.logger.error({ err, service: this.service }, `kubernetes: a discovery subscriber for '${this.service}' threw`) }
    }
  }

  /** Once, before the first list is used: the pods' registered-at annotations; a failure is said once and the list goes on without them. */
  #readAnnotations (): void {
    this.#annotationsAsked = true
    podRegisteredAt(this.#api, this.#o.namespace, this.service, this.#abort.signal).then(({ times, bad }) => {
      if (bad > 0) this.#o.logger.warn({ service: this.service }, `kubernetes: ${bad} pod(s) of '${this.service}' carry a ${REGISTERED_AT_ANNOTATION} that is neither ms since the epoch nor an RFC 3339 time; ignored`)
      return times
    }, (err: unknown) => {
      this.#o.logger.warn({ err, code: (err as { code?: unknown }).code, service: this.service }, `kubernetes: podAnnotations: cannot read the pods of '${this.service}' (${err instanceof Error ? err.message : String(err)}); endpoints of the first list count as warm`)
      return new Map<string, number>()
    }).then((times) => {
      if (this.#abort.signal.aborted) return
      this.#registeredAt = times
      this.#update(this.#watch.slices, true)
    }).catch(() => {})
  }

  /** An empty list: say why once (no such Service, or one without a selector). */
  async #checkService (): Promise<void> {
    if (this.#checkedMissing) return
    this.#checkedMissing = true
    const where = `'${this.service}' in namespace '${this.#o.namespace}'`
    try {
      const svc = await this.#api.getJson(`/api/v1/namespaces/${encodeURIComponent(this.#o.namespace)}/services/${encodeURIComponent(this.service)}`, `get service ${where}`, this.#abort.signal)
      const spec = isObj(svc) && isObj(svc.spec) ? svc.spec : {}
      if (!isObj(spec.selector)) this.#o.logger.warn({ service: this.service }, `kubernetes: Service ${where} has no selector: its EndpointSlices are managed by hand (none yet)`)
      else this.#o.logger.info({ service: this.service }, `kubernetes: Service ${where} has no endpoints yet`)
    } catch (err) {
      if (err instanceof KubernetesApiError && err.status === 404) {
        this.#o.logger.warn({ service: this.service, code: 'LAMEDUCK_ERR_K8S_NOT_FOUND' }, `kubernetes: Service ${where} does not exist: no instances until it does; still watching`)
      } else {
        this.#o.logger.debug({ err, service: this.service }, `kubernetes: could not check that Service ${where} exists`)
      }
    }
  }

  #failed (err: unknown, first: boolean): void {
    const code = (err as { code?: unknown }).code
    const message = err instanceof Error ? err.message : String(err)
    if (!first) { this.#o.logger.debug({ err, service: this.service }, message); return }
    const kept = this.#instances.length
    this.#o.logger.warn({ err, code, service: this.service }, `${message}; ${this.#listed.isOpen ? `keeping the last list (${kept} instance${kept === 1 ? '' : 's'})` : 'no list yet'} and retrying`)
  }
}

/** Same ids, addresses and registration times in the same order (both lists are sorted by id): nothing to tell. */
function sameRegistrations (a: readonly Instance[], b: readonly Instance[]): boolean {
  if (a.length !== b.length) return false
  for (let k = 0; k < a.length; k++) {
    const x = a[k]!
    const y = b[k]!
    if (x.id !== y.id || x.host !== y.host || x.port !== y.port || x.metadata['lameduck.registeredAt'] !== y.metadata['lameduck.registeredAt']) return false
  }
  return true
}
