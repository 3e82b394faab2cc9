// Consumer side: eureka-js-client fetching the full registry every
// registryFetchInterval, turned into core Discovery (UP instances, change events).
import { Latch, serviceKey, type Discovery, type Instance, type Logger } from '@lameduck/core'
import { callback, describeFailure, type EurekaInstanceJson, type EurekaJsClient } from './client.ts'
import { fromEurekaInstance } from './instance-mapping.ts'

interface Subscriber { service: string, onChange: (list: Instance[]) => void, last: string }

export interface RegistryViewSettings {
  logger: Logger
  preferIpAddress: boolean
  registryFetchIntervalMs: number
  createClient: () => EurekaJsClient
}

/**
 * The consumer's view of the registry. eureka-js-client does the fetching; the
 * list is taken from the registry body it just parsed (transformRegistry), not
 * from its cache, because the cache:
 * - keys instances by hostName + port, so two instances on one address collapse
 *   into one (and with filterUpInstances off, a stale DOWN one can hide the UP one);
 * - is returned as internal arrays that later fetches replace or mutate, and every
 *   lookup that finds nothing logs a warning, which per-request lookups would flood;
 * - in delta mode (refused at option validation) splices the wrong index and never
 *   emits registryUpdated.
 * If a future client renames transformRegistry, the cache is used instead.
 */
export class RegistryView implements Discovery {
  readonly #s: RegistryViewSettings
  #client: EurekaJsClient | undefined
  #apps = new Map<string, Array<Omit<Instance, 'service'>>>()
  readonly #subscribers = new Set<Subscriber>()
  readonly #fetched = new Latch()
  #closed = false
  #interval: NodeJS.Timeout | undefined
  #inflight = false
  #failures = 0
  /** The last registry body the client parsed. */
  #body: unknown
  readonly stats = { fetches: 0, lastFetchAt: null as number | null, lastError: null as string | null, started: false }

  constructor (settings: RegistryViewSettings) {
    this.#s = settings
  }

  /**
   * Starts fetching (idempotent): at once, then every registryFetchInterval at a
   * fixed rate like the client's own interval. The adapter drives the client's
   * fetchRegistry() itself instead of start(), so it sees every failure, and its
   * timer is unref'd (the client's setInterval would keep the process alive).
   */
  start (): void {
    if (this.#client !== undefined || this.#closed) return
    const client = this.#client = this.#s.createClient()
    this.stats.started = true
    const transform = client.transformRegistry
    if (typeof transform === 'function') {
      client.transformRegistry = (registry) => {
        transform.call(client, registry)
        this.#body = registry
      }
    }
    client.on('registryUpdated', () => this.#onFetched(client))
    this.#fetch()
    this.#interval = setInterval(() => this.#fetch(), this.#s.registryFetchIntervalMs)
    this.#interval.unref()
  }

  #fetch (): void {
    if (this.#inflight || this.#closed) return
    this.#inflight = true
    this.#client!.fetchRegistry((err) => {
      this.#inflight = false
      if (err) this.#failed(err)
    })
  }

  /** Resolves after the first successful fetch. */
  ready (signal?: AbortSignal): Promise<void> {
    this.start()
    return this.#fetched.wait(signal)
  }

  /** Fetches the full registry now (in addition to the interval). */
  async refresh (): Promise<void> {
    this.start()
    try {
      await callback((cb) => this.#client!.fetchRegistry(cb))
    } catch (err) {
      this.#failed(err)
      throw err
    }
  }

  instances (service: string): Instance[] {
    this.start()
    return this.#list(service)
  }

  subscribe (service: string, onChange: (list: Instance[]) => void): () => void {
    this.start()
    const sub: Subscriber = { service, onChange, last: signature(this.#list(service)) }
    this.#subscribers.add(sub)
    return () => { this.#subscribers.delete(sub) }
  }

  close (): void {
    this.#closed = true
    this.#subscribers.clear()
    clearInterval(this.#interval)
    this.#client?.removeAllListeners('registryUpdated')
  }

  describe (): Record<string, unknown> {
    return { ...this.stats, apps: this.#apps.size }
  }

  #list (service: string): Instance[] {
    const list = this.#apps.get(serviceKey(service)) ?? []
    return list.map((i) => ({ ...i, service, metadata: { ...i.metadata } }))
  }

  #onFetched (client: EurekaJsClient): void {
    if (this.#closed) return
    const raw = this.#rawApps(client)
    if (raw === null) {
      // The client accepted a body that is no registry (`null`, no application list): keep the last list.
      this.#failed(new Error('the registry body has no applications.application list'))
      return
    }
    const apps = new Map<string, Array<Omit<Instance, 'service'>>>()
    for (const [name, raws] of raw) {
      const byId = new Map<string, Omit<Instance, 'service'>>()
      for (const raw of raws) {
        const i = fromEurekaInstance(raw, name, this.#s.preferIpAddress)
        if (i === undefined) continue
        const { service: _service, ...rest } = i
        byId.set(i.id, rest)
      }
      const list = [...byId.values()].sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
      if (list.length > 0) apps.set(serviceKey(name), [...(apps.get(serviceKey(name)) ?? []), ...list])
    }
    this.#apps = apps
    this.stats.fetches++
    this.stats.lastFetchAt = Date.now()
    this.stats.lastError = null
    if (this.#failures > 0) this.#s.logger.info({}, 'eureka: registry fetches succeed again')
    this.#failures = 0
    this.#fetched.open()
    for (const sub of [...this.#subscribers]) {
      const list = this.#list(sub.service)
      const sig = signature(list)
      if (sig === sub.last) continue
      sub.last = sig
      try {
        sub.onChange(list)
      } catch (err) {
        this.#s.logger.error({ err }, `eureka: a discovery subscriber for '${sub.service}' threw: ${describeFailure(err)}`)
      }
    }
  }

  /**
   * Apps and instances of the last parsed body (old servers send single objects, not arrays);
   * the client's cache when transformRegistry could not be wrapped; null when the body is no registry.
   */
  #rawApps (client: EurekaJsClient): RawApps | null {
    const body = this.#body as { applications?: { application?: unknown } } | null | undefined
    this.#body = undefined
    if (body === undefined && typeof client.transformRegistry !== 'function') return Object.entries(client.cache.app)
    const applications = body?.applications as { application?: unknown, apps__hashcode?: unknown } | undefined
    const list = applications?.application
    // Current servers always write the array; an old one may leave it out of an empty registry,
    // whose hash code is ''. Anything else is no registry (the client then keeps its cache too).
    if (list === undefined && applications?.apps__hashcode === '') return []
    if (typeof list !== 'object' || list === null) return null
    return asArray(list as Array<{ name: string, instance: EurekaInstanceJson | EurekaInstanceJson[] }>)
      .filter((app) => typeof app?.name === 'string')
      .map((app) => [app.name, asArray(app.instance)])
  }

  #failed (err: unknown): void {
    this.#failures++
    this.stats.lastError = describeFailure(err)
    const msg = `eureka: registry fetch failed (${this.stats.lastError}); the last fetched list stays in use`
    if (this.#failures === 1 || this.#failures % 10 === 0) this.#s.logger.warn({ err, failures: this.#failures }, msg)
    else this.#s.logger.debug({ err, failures: this.#failures }, msg)
  }
}

type RawApps = Iterable<[string, EurekaInstanceJson[]]>
const asArray = <T>(v: T | T[] | undefined | null): T[] => v === undefined || v === null ? [] : Array.isArray(v) ? v : [v]

function signature (list: Instance[]): string {
  return JSON.stringify(list.map((i) => [i.id, i.host, i.port, i.metadata]))
}
