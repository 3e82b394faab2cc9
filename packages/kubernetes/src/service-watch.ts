// One Service's EndpointSlices, kept by list + watch: the list gives a resourceVersion, the
// watch goes on from it (bookmarks move it on), a 410 Gone relists, a failure backs off with
// jitter, and a relist every resyncMs repairs anything a watch could have missed. Whatever
// fails, the last good list stays.
import { backoffDelay, sleep } from '@lameduck/core'
import type { Clock, Instance, Logger } from '@lameduck/core'
import type { ApiClient } from './api-client.ts'
import { parseSlice, sliceName, type ParsedSlice } from './endpoint-slices.ts'
import { KubernetesApiError, KubernetesStreamError } from './errors.ts'
import { toInstances } from './instances.ts'
import type { ResolvedOptions } from './options.ts'

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

export interface ServiceWatchStats {
  service: string
  namespace: string
  slices: number
  endpoints: number
  instances: number
  resourceVersion: string | null
  lists: number
  watches: number
  events: number
  /** Relists after the server said 410 Gone (the resourceVersion was compacted away). */
  gone: number
  lastListAt: number | null
  /** The failure retried now, or null while the watch works. */
  lastError: { code: string, message: string } | null
}

const MAX_PROBLEMS_REMEMBERED = 200
const PAGE = 100

export class ServiceWatch {
  readonly service: string
  readonly #o: ResolvedOptions
  readonly #api: ApiClient
  readonly #log: Logger
  readonly #clock: Clock
  readonly #abort = new AbortController()
  #slices = new Map<string, ParsedSlice>()
  #rv: string | undefined
  #listed = false
  #instances: Instance[] = []
  #signature = ''
  /** When each ready endpoint was first seen ready (undefined: already ready in the first list). */
  #readySince = new Map<string, number | undefined>()
  #warned = new Set<string>()
  #failures = 0
  #failing: string | undefined
  #checkedMissing = false
  #waiters: Array<() => void> = []
  readonly #listeners = new Set<(list: Instance[]) => void>()
  readonly stats: ServiceWatchStats

  constructor (service: string, options: ResolvedOptions, api: ApiClient) {
    this.service = service
    this.#o = options
    this.#api = api
    this.#log = options.logger
    this.#clock = options.clock
    this.stats = { service, namespace: options.namespace, slices: 0, endpoints: 0, instances: 0, resourceVersion: null, lists: 0, watches: 0, events: 0, gone: 0, lastListAt: null, lastError: null }
    this.#run().catch((err: unknown) => options.logger.error({ err, service }, `kubernetes: the watch of '${service}' stopped`))
  }

  get instances (): Instance[] { return this.#instances }

  subscribe (fn: (list: Instance[]) => void): () => void {
    this.#listeners.add(fn)
    return () => { this.#listeners.delete(fn) }
  }

  /** Resolves after the first successful list. */
  ready (signal?: AbortSignal): Promise<void> {
    if (this.#listed) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const done = (): void => { signal?.removeEventListener('abort', abort); resolve() }
      const abort = (): void => { this.#waiters = this.#waiters.filter((w) => w !== done); reject(signal!.reason) }
      if (signal?.aborted) { abort(); return }
      signal?.addEventListener('abort', abort, { once: true })
      this.#waiters.push(done)
    })
  }

  close (): void {
    this.#abort.abort(new Error('closed'))
    this.#listeners.clear()
  }

  get #path (): string {
    const selector = encodeURIComponent(`kubernetes.io/service-name=${this.service}`)
    return `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(this.#o.namespace)}/endpointslices?labelSelector=${selector}`
  }

  async #run (): Promise<void> {
    const signal = this.#abort.signal
    while (!signal.aborted) {
      try {
        const due = this.stats.lastListAt === null || this.#clock.now() - this.stats.lastListAt >= this.#o.resyncMs
        if (this.#rv === undefined || due) await this.#list(signal)
        await this.#watch(signal)
      } catch (err) {
        if (signal.aborted) return
        if (err instanceof KubernetesApiError && err.status === 410) {
          // The resourceVersion is too old (compacted): start over from a fresh list, at once.
          this.stats.gone++
          this.#rv = undefined
          this.#log.info({ service: this.service }, `kubernetes: the watch of '${this.service}' is too old (410 Gone); listing again`)
          continue
        }
        this.#failed(err)
        await sleep(this.#clock, backoffDelay(this.#failures, this.#o.backoff), signal, { resolveOnAbort: true })
      }
    }
  }

  async #list (signal: AbortSignal): Promise<void> {
    const slices = new Map<string, ParsedSlice>()
    let cont: string | undefined
    let rv: string | undefined
    do {
      const page = await this.#api.getJson(`${this.#path}&limit=${PAGE}${cont === undefined ? '' : `&continue=${encodeURIComponent(cont)}`}`, `list endpointslices of '${this.service}' in '${this.#o.namespace}'`, signal)
      if (!isObj(page) || !Array.isArray(page.items) || !isObj(page.metadata)) throw new KubernetesStreamError(`list endpointslices of '${this.service}'`, 'the answer is no EndpointSliceList')
      for (const item of page.items as unknown[]) {
        const slice = parseSlice(item, this.#o.port, this.#o.maxEndpoints)
        if (slice === undefined) { this.#warn('an EndpointSlice without metadata.name skipped'); continue }
        slices.set(slice.name, slice)
      }
      rv = typeof page.metadata.resourceVersion === 'string' ? page.metadata.resourceVersion : undefined
      cont = typeof page.metadata.continue === 'string' && page.metadata.continue !== '' ? page.metadata.continue : undefined
    } while (cont !== undefined)
    if (signal.aborted) return
    this.#slices = slices
    this.#rv = rv
    this.stats.lists++
    this.stats.lastListAt = this.#clock.now()
    this.#recovered()
    this.#update()
    if (!this.#listed) {
      this.#listed = true
      for (const w of this.#waiters.splice(0)) w()
    }
    if (slices.size === 0) this.#checkService(signal).catch(() => {})
    else this.#checkedMissing = false
  }

  async #watch (signal: AbortSignal): Promise<void> {
    const untilResync = this.#o.resyncMs - (this.#clock.now() - (this.stats.lastListAt ?? 0))
    // Spread like client-go's (5..10 min), shorter when the next resync is nearer.
    const timeoutS = Math.max(1, Math.round(Math.min(untilResync, this.#o.watchTimeoutMs * (1 + Math.random())) / 1000))
    const path = `${this.#path}&watch=1&allowWatchBookmarks=true&timeoutSeconds=${timeoutS}${this.#rv === undefined ? '' : `&resourceVersion=${encodeURIComponent(this.#rv)}`}`
    this.stats.watches++
    await this.#api.watch(path, `watch endpointslices of '${this.service}' in '${this.#o.namespace}'`, {
      signal,
      deadlineMs: timeoutS * 1000 + this.#o.watchGraceMs,
      onOpen: () => this.#recovered(),
      onLine: (line) => this.#event(line)
    })
  }

  #event (line: string): void {
    if (line.trim() === '') return
    const what = `watch endpointslices of '${this.service}'`
    let event: unknown
    try { event = JSON.parse(line) } catch { throw new KubernetesStreamError(what, `the watch sent a line that is not JSON (${line.length} characters, starting ${JSON.stringify(line.slice(0, 40))}): the watch was cut`) }
    if (!isObj(event) || typeof event.type !== 'string' || !isObj(event.object)) throw new KubernetesStreamError(what, 'the watch sent an event without type and object: the watch was cut')
    const object = event.object
    this.stats.events++
    const rv = isObj(object.metadata) && typeof object.metadata.resourceVersion === 'string' ? object.metadata.resourceVersion : undefined
    switch (event.type) {
      case 'ERROR': {
        const code = typeof object.code === 'number' ? object.code : 500
        throw new KubernetesApiError(code, typeof object.reason === 'string' ? object.reason : '', what, typeof object.message === 'string' ? object.message.slice(0, 500) : 'an ERROR event')
      }
      case 'BOOKMARK':
        if (rv !== undefined) this.#rv = rv
        return
      case 'ADDED': case 'MODIFIED': case 'DELETED': {
        const name = sliceName(object)
        if (name === undefined) { this.#warn('a watch event for an EndpointSlice without metadata.name ignored'); break }
        if (event.type === 'DELETED') this.#slices.delete(name)
        else this.#slices.set(name, parseSlice(object, this.#o.port, this.#o.maxEndpoints)!)
        break
      }
      default:
        this.#warn(`a watch event of unknown type ${JSON.stringify(event.type.slice(0, 40))} ignored`)
    }
    if (rv !== undefined) this.#rv = rv
    this.#update()
  }

  /** Rebuilds the instance list from the slices; tells subscribers when it changed. */
  #update (): void {
    for (const slice of this.#slices.values()) for (const p of slice.problems) this.#warn(p)
    const { instances, endpoints, readySince } = toInstances(this.service, this.#slices.values(), this.#readySince, {
      now: this.#clock.now(),
      initial: !this.#listed,
      warmupMs: this.#o.warmupMs,
      maxEndpoints: this.#o.maxEndpoints,
      namespace: this.#o.namespace
    })
    this.#readySince = readySince
    this.stats.slices = this.#slices.size
    this.stats.endpoints = endpoints
    this.stats.instances = instances.length
    this.stats.resourceVersion = this.#rv ?? null
    const signature = instances.map((i) => `${i.id} ${i.host}:${i.port} ${i.metadata['lameduck.registeredAt'] ?? ''}`).join('\n')
    if (signature === this.#signature) return
    this.#signature = signature
    this.#instances = instances
    for (const fn of [...this.#listeners]) {
      try { fn(instances.map((i) => ({ ...i, metadata: { ...i.metadata } }))) } catch (err) { this.#log.error({ err, service: this.service }, `kubernetes: a discovery subscriber for '${this.service}' threw`) }
    }
  }

  /** An empty list: say why once (no such Service, or one without a selector). */
  async #checkService (signal: AbortSignal): Promise<void> {
    if (this.#checkedMissing) return
    this.#checkedMissing = true
    const where = `'${this.service}' in namespace '${this.#o.namespace}'`
    try {
      const svc = await this.#api.getJson(`/api/v1/namespaces/${encodeURIComponent(this.#o.namespace)}/services/${encodeURIComponent(this.service)}`, `get service ${where}`, signal)
      const spec = isObj(svc) && isObj(svc.spec) ? svc.spec : {}
      if (!isObj(spec.selector)) this.#log.warn({ service: this.service }, `kubernetes: Service ${where} has no selector: its EndpointSlices are managed by hand (none yet)`)
      else this.#log.info({ service: this.service }, `kubernetes: Service ${where} has no endpoints yet`)
    } catch (err) {
      if (err instanceof KubernetesApiError && err.status === 404) {
        this.#log.warn({ service: this.service, code: 'LAMEDUCK_ERR_K8S_NOT_FOUND' }, `kubernetes: Service ${where} does not exist: no instances until it does; still watching`)
      } else {
        this.#log.debug({ err, service: this.service }, `kubernetes: could not check that Service ${where} exists`)
      }
    }
  }

  #failed (err: unknown): void {
    this.#failures++
    const code = (err as { code?: unknown }).code
    const e = { code: typeof code === 'string' ? code : 'LAMEDUCK_ERR_K8S_STREAM', message: err instanceof Error ? err.message : String(err) }
    this.stats.lastError = e
    // Once per kind of failure, not once per retry: a 403 retried for an hour is one warning.
    const kind = `${e.code} ${err instanceof KubernetesApiError ? err.status : ''}`
    if (this.#failing === kind) { this.#log.debug({ err, service: this.service, failures: this.#failures }, e.message); return }
    this.#failing = kind
    const kept = this.#instances.length
    this.#log.warn({ err, code: e.code, service: this.service, failures: this.#failures }, `${e.message}; ${this.#listed ? `keeping the last list (${kept} instance${kept === 1 ? '' : 's'})` : 'no list yet'} and retrying`)
  }

  #recovered (): void {
    if (this.#failing !== undefined) this.#log.info({ service: this.service }, `kubernetes: watching '${this.service}' works again`)
    this.#failing = undefined
    this.#failures = 0
    this.stats.lastError = null
  }

  #warn (problem: string): void {
    if (this.#warned.has(problem)) return
    if (this.#warned.size >= MAX_PROBLEMS_REMEMBERED) this.#warned.clear()
    this.#warned.add(problem)
    this.#log.warn({ service: this.service }, `kubernetes: ${problem}`)
  }
}
