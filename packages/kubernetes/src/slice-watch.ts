// EndpointSlices kept by list + watch: the list gives a resourceVersion, the watch goes on
// from it (bookmarks move it on), a 410 Gone relists, a failure backs off with jitter, and a
// relist every resyncMs repairs anything a watch could have missed. Whatever fails, the last
// good set of slices stays. Used per Service by discovery, and for the pod's own endpoint.
import { backoffDelay, sleep } from '@lameduck/core'
import type { BackoffOptions, Clock, Logger } from '@lameduck/core'
import type { ApiClient } from './api-client.ts'
import { parseSlice, sliceName, type ParsedSlice, type PortChoice } from './endpoint-slices.ts'
import { KubernetesApiError, KubernetesStreamError } from './errors.ts'

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

export interface SliceWatchSettings {
  namespace: string
  port: PortChoice
  resyncMs: number
  watchTimeoutMs: number
  watchGraceMs: number
  maxEndpoints: number
  backoff: Required<BackoffOptions>
  logger: Logger
  clock: Clock
}

export interface SliceWatchHooks {
  /** The slices changed (a list, or a watch event). */
  onChange: (slices: ReadonlyMap<string, ParsedSlice>, listed: boolean) => void
  /** A failure, retried with backoff; `first` once per kind of failure until it works again. */
  onFailure?: (err: unknown, first: boolean) => void
  onRecovered?: () => void
}

export interface SliceWatchStats {
  namespace: string
  slices: number
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

export class SliceWatch {
  readonly #s: SliceWatchSettings
  readonly #api: ApiClient
  readonly #hooks: SliceWatchHooks
  readonly #label: string
  readonly #selector: string | undefined
  readonly #abort = new AbortController()
  #slices = new Map<string, ParsedSlice>()
  #rv: string | undefined
  #warned = new Set<string>()
  #failures = 0
  #failing: string | undefined
  readonly stats: SliceWatchStats

  /** `label` names the watch in messages (`'orders'`); `selector` is a label selector, or every slice of the namespace. */
  constructor (label: string, selector: string | undefined, settings: SliceWatchSettings, api: ApiClient, hooks: SliceWatchHooks) {
    this.#label = label
    this.#selector = selector
    this.#s = settings
    this.#api = api
    this.#hooks = hooks
    this.stats = { namespace: settings.namespace, slices: 0, resourceVersion: null, lists: 0, watches: 0, events: 0, gone: 0, lastListAt: null, lastError: null }
    this.#run().catch((err: unknown) => settings.logger.error({ err }, `kubernetes: the watch of ${label} stopped`))
  }

  get slices (): ReadonlyMap<string, ParsedSlice> { return this.#slices }
  get failing (): boolean { return this.#failing !== undefined }

  close (): void {
    this.#abort.abort(new Error('closed'))
  }

  /** One warning per distinct problem (bounded), not one per event. */
  warn (problem: string): void {
    if (this.#warned.has(problem)) return
    if (this.#warned.size >= MAX_PROBLEMS_REMEMBERED) this.#warned.clear()
    this.#warned.add(problem)
    this.#s.logger.warn({ watch: this.#label }, `kubernetes: ${problem}`)
  }

  get #path (): string {
    const selector = this.#selector === undefined ? '' : `&labelSelector=${encodeURIComponent(this.#selector)}`
    return `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(this.#s.namespace)}/endpointslices?${selector.slice(1)}`
  }

  async #run (): Promise<void> {
    const signal = this.#abort.signal
    while (!signal.aborted) {
      try {
        const due = this.stats.lastListAt === null || this.#s.clock.now() - this.stats.lastListAt >= this.#s.resyncMs
        if (this.#rv === undefined || due) await this.#list(signal)
        await this.#watch(signal)
      } catch (err) {
        if (signal.aborted) return
        if (err instanceof KubernetesApiError && err.status === 410) {
          // The resourceVersion is too old (compacted): start over from a fresh list, at once.
          this.stats.gone++
          this.#rv = undefined
          this.#s.logger.info({ watch: this.#label }, `kubernetes: the watch of ${this.#label} is too old (410 Gone); listing again`)
          continue
        }
        this.#failed(err)
        await sleep(this.#s.clock, backoffDelay(this.#failures, this.#s.backoff), signal, { resolveOnAbort: true })
      }
    }
  }

  async #list (signal: AbortSignal): Promise<void> {
    const slices = new Map<string, ParsedSlice>()
    const what = `list endpointslices of ${this.#label} in '${this.#s.namespace}'`
    let cont: string | undefined
    let rv: string | undefined
    let total = 0
    do {
      const page = await this.#api.getJson(`${this.#path}&limit=${PAGE}${cont === undefined ? '' : `&continue=${encodeURIComponent(cont)}`}`, what, signal)
      if (!isObj(page) || !Array.isArray(page.items) || !isObj(page.metadata)) throw new KubernetesStreamError(what, 'the answer is no EndpointSliceList')
      for (const item of page.items as unknown[]) {
        // maxEndpoints bounds all slices together, not each: a stream of many slices is bounded too.
        const slice = parseSlice(item, this.#s.port, Math.max(0, this.#s.maxEndpoints - total))
        if (slice === undefined) { this.warn('an EndpointSlice without metadata.name skipped'); continue }
        total += slice.endpoints.length - (slices.get(slice.name)?.endpoints.length ?? 0)
        slices.set(slice.name, slice)
      }
      rv = typeof page.metadata.resourceVersion === 'string' ? page.metadata.resourceVersion : undefined
      cont = typeof page.metadata.continue === 'string' && page.metadata.continue !== '' ? page.metadata.continue : undefined
    } while (cont !== undefined)
    if (signal.aborted) return
    this.#slices = slices
    this.#rv = rv
    this.stats.lists++
    this.stats.lastListAt = this.#s.clock.now()
    this.#recovered()
    this.#changed(true)
  }

  async #watch (signal: AbortSignal): Promise<void> {
    const untilResync = this.#s.resyncMs - (this.#s.clock.now() - (this.stats.lastListAt ?? 0))
    // Spread like client-go's (5..10 min), shorter when the next resync is nearer.
    const timeoutS = Math.max(1, Math.round(Math.min(untilResync, this.#s.watchTimeoutMs * (1 + Math.random())) / 1000))
    const path = `${this.#path}&watch=1&allowWatchBookmarks=true&timeoutSeconds=${timeoutS}${this.#rv === undefined ? '' : `&resourceVersion=${encodeURIComponent(this.#rv)}`}`
    this.stats.watches++
    await this.#api.watch(path, `watch endpointslices of ${this.#label} in '${this.#s.namespace}'`, {
      signal,
      deadlineMs: timeoutS * 1000 + this.#s.watchGraceMs,
      onOpen: () => this.#recovered(),
      onLine: (line) => this.#event(line)
    })
  }

  #event (line: string): void {
    if (line.trim() === '') return
    const what = `watch endpointslices of ${this.#label}`
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
        this.stats.resourceVersion = this.#rv ?? null
        return
      case 'ADDED': case 'MODIFIED': case 'DELETED': {
        const name = sliceName(object)
        if (name === undefined) { this.warn('a watch event for an EndpointSlice without metadata.name ignored'); break }
        const others = this.#total() - (this.#slices.get(name)?.endpoints.length ?? 0)
        if (event.type === 'DELETED') this.#slices.delete(name)
        else this.#slices.set(name, parseSlice(object, this.#s.port, Math.max(0, this.#s.maxEndpoints - others))!)
        break
      }
      default:
        this.warn(`a watch event of unknown type ${JSON.stringify(event.type.slice(0, 40))} ignored`)
    }
    if (rv !== undefined) this.#rv = rv
    this.#changed(false)
  }

  #total (): number {
    let n = 0
    for (const slice of this.#slices.values()) n += slice.endpoints.length
    return n
  }

  #changed (listed: boolean): void {
    for (const slice of this.#slices.values()) for (const p of slice.problems) this.warn(p)
    this.stats.slices = this.#slices.size
    this.stats.resourceVersion = this.#rv ?? null
    this.#hooks.onChange(this.#slices, listed)
  }

  #failed (err: unknown): void {
    this.#failures++
    const code = (err as { code?: unknown }).code
    const e = { code: typeof code === 'string' ? code : 'LAMEDUCK_ERR_K8S_STREAM', message: err instanceof Error ? err.message : String(err) }
    this.stats.lastError = e
    // Once per kind of failure, not once per retry: a 403 retried for an hour is one warning.
    const kind = `${e.code} ${err instanceof KubernetesApiError ? err.status : ''}`
    const first = this.#failing !== kind
    this.#failing = kind
    this.#hooks.onFailure?.(err, first)
  }

  #recovered (): void {
    if (this.#failing !== undefined) {
      this.#s.logger.info({ watch: this.#label }, `kubernetes: watching ${this.#label} works again`)
      this.#hooks.onRecovered?.()
    }
    this.#failing = undefined
    this.#failures = 0
    this.stats.lastError = null
  }
}
