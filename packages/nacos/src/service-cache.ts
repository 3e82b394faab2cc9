import { serviceKey, type Instance, type Logger } from '@lameduck/core'
import type { SdkBridge, UpdateSource } from './sdk-bridge.ts'
import type { SdkHost, ServiceInfoData } from './sdk-types.ts'

// Discovery's own view of each watched service, fed by every ServiceInfo the
// SDK receives. Unlike the SDK's cache it applies empty host lists (the last
// instance does go away), ignores answers older than what it holds, and uses
// one cache key per service (the SDK keeps two: clusters '' and 'DEFAULT').

interface Watch {
  service: string
  groupedName: string
  clusters: string
  list: Instance[] | undefined
  signature: string
  lastRefTime: number
  cacheMillis: number | undefined
  updatedAt: number | null
  lastSource: UpdateSource | null
  reachProtectionThreshold: boolean
  listeners: Set<(list: Instance[]) => void>
  waiters: Set<() => void>
  sdkListener: (hosts: SdkHost[], info?: { lastRefTime?: number }) => void
}

export interface ServiceCacheOptions {
  bridge: SdkBridge
  group: string
  clusters: string
  logger: Logger
}

const RACE_MS = 2_000

/** A host consumers may route to, as the SDK's selectInstances filters them. */
function routable (h: SdkHost): boolean {
  return h.healthy !== false && h.enabled !== false && (h.weight === undefined || h.weight > 0)
}

/** A host entry consumers can connect to: anything else in a host list is dropped (and logged). */
function wellFormed (h: unknown): h is SdkHost {
  if (typeof h !== 'object' || h === null) return false
  const { ip, port } = h as { ip?: unknown, port?: unknown }
  return typeof ip === 'string' && ip !== '' && Number.isInteger(port) && (port as number) >= 1 && (port as number) <= 65_535
}

function toInstance (service: string, h: SdkHost): Instance {
  const metadata: Record<string, string> = {}
  const raw = typeof h.metadata === 'object' && h.metadata !== null && !Array.isArray(h.metadata) ? h.metadata : {}
  for (const [k, v] of Object.entries(raw)) metadata[k] = typeof v === 'string' ? v : JSON.stringify(v) ?? String(v)
  return { id: `${h.ip}:${h.port}`, service, host: h.ip, port: h.port, status: 'UP', metadata }
}

export class ServiceCache {
  readonly #o: ServiceCacheOptions
  readonly #watches = new Map<string, Watch>()
  /** By the SDK's cache key: grouped name + '@@' + clusters. */
  readonly #byKey = new Map<string, Watch>()
  readonly counts = { pushes: 0, polls: 0, changesByPush: 0, changesByPoll: 0 }
  #warnedNoPush = false
  #closed = false

  constructor (options: ServiceCacheOptions) {
    this.#o = options
    if (options.bridge.observing) options.bridge.onServiceInfo((data, source) => this.#observe(data, source))
  }

  #watch (service: string): Watch {
    const key = serviceKey(service)
    let watch = this.#watches.get(key)
    if (watch !== undefined) return watch
    const groupedName = `${this.#o.group}@@${service}`
    const w: Watch = {
      service,
      groupedName,
      clusters: this.#o.clusters,
      list: undefined,
      signature: '',
      lastRefTime: 0,
      cacheMillis: undefined,
      updatedAt: null,
      lastSource: null,
      reachProtectionThreshold: false,
      listeners: new Set(),
      waiters: new Set(),
      // Only a fallback: with the hooks in place every update arrives through #observe.
      sdkListener: (hosts, info) => {
        if (this.#o.bridge.observing || !Array.isArray(hosts)) return
        this.#apply(w, { hosts, lastRefTime: info?.lastRefTime }, 'poll')
      }
    }
    watch = w
    this.#watches.set(key, w)
    this.#byKey.set(`${groupedName}@@${w.clusters}`, w)
    if (!this.#closed) {
      // One SDK subscription per service: it starts the poll loop and the UDP push
      // subscription. Never getAllInstances, which would start a second poll loop.
      this.#o.bridge.ready().then(() => {
        if (this.#closed) return
        this.#o.bridge.client.subscribe({ serviceName: service, groupName: this.#o.group, clusters: w.clusters }, w.sdkListener)
      }, (err: unknown) => this.#o.logger.error({ err }, `nacos: cannot watch ${service}: the client did not start`))
    }
    return w
  }

  #observe (data: ServiceInfoData, source: UpdateSource): void {
    if (source === 'push') this.counts.pushes++
    else this.counts.polls++
    const name = data.name ?? data.dom
    const watch = this.#byKey.get(`${name}@@${data.clusters ?? ''}`)
    if (watch !== undefined) this.#apply(watch, data, source)
  }

  #apply (watch: Watch, data: ServiceInfoData, source: UpdateSource): void {
    // hosts:null carries no information (1.x answers it for some lookups); [] means empty.
    if (!Array.isArray(data.hosts)) return
    // A poll answer made just before a push can arrive just after it: skip it. Only
    // within RACE_MS, though: a larger gap is clock skew between Nacos nodes, and
    // skipping would hold on to old data until the clocks caught up.
    const refTime = typeof data.lastRefTime === 'number' ? data.lastRefTime : 0
    const age = watch.lastRefTime - refTime
    if (refTime > 0 && age > 0 && age <= RACE_MS) {
      this.#o.logger.debug({ nacos: { service: watch.service, refTime, held: watch.lastRefTime } }, `nacos: ignoring an older ${source} answer for ${watch.service}`)
      return
    }
    if (refTime > 0) watch.lastRefTime = refTime
    if (typeof data.cacheMillis === 'number' && data.cacheMillis > 0) watch.cacheMillis = data.cacheMillis
    watch.reachProtectionThreshold = data.reachProtectionThreshold === true
    const hosts = data.hosts.filter(wellFormed)
    if (hosts.length < data.hosts.length) {
      this.#o.logger.warn({ nacos: { service: watch.service, dropped: data.hosts.length - hosts.length, source } }, `nacos: ignoring ${data.hosts.length - hosts.length} host(s) of ${watch.service} without a usable ip and port (${source})`)
    }
    const list = hosts.filter(routable).map((h) => toInstance(watch.service, h)).sort((a, b) => a.id.localeCompare(b.id))
    const signature = JSON.stringify(list)
    const first = watch.list === undefined
    watch.list = list
    for (const resolve of watch.waiters) resolve()
    watch.waiters.clear()
    if (!first && signature === watch.signature) return
    watch.signature = signature
    watch.updatedAt = Date.now()
    watch.lastSource = source
    if (!first) this.#noteChange(watch, source)
    this.#o.logger.debug({ nacos: { service: watch.service, instances: list.length, source } }, `nacos: ${watch.service} now has ${list.length} instance(s) (${source})`)
    for (const fn of watch.listeners) {
      try { fn(list.map((i) => ({ ...i, metadata: { ...i.metadata } }))) } catch (err) { this.#o.logger.error({ err }, 'nacos: a subscriber threw') }
    }
  }

  /** A change seen first by polling means its push did not arrive; say so once when no push ever does. */
  #noteChange (watch: Watch, source: UpdateSource): void {
    if (source === 'push') { this.counts.changesByPush++; return }
    this.counts.changesByPoll++
    if (this.#warnedNoPush || this.counts.pushes > 0 || this.counts.changesByPoll < 2 || !this.#o.bridge.observing) return
    this.#warnedNoPush = true
    this.#o.logger.warn({ nacos: { service: watch.service, udpPort: this.#o.bridge.udpPort(), cacheMillis: watch.cacheMillis } },
      `nacos: changes arrive only by polling (every ${watch.cacheMillis ?? 'cacheMillis'} ms) and no UDP push has arrived: ` +
      `Nacos pushes to this host's first non-loopback IPv4 and UDP port ${String(this.#o.bridge.udpPort())}, which it cannot reach (or push is off). ` +
      'Size the propagation window with nacosWindows({ cacheMillis }).')
  }

  instances (service: string): Instance[] {
    const list = this.#watch(service).list ?? []
    return list.map((i) => ({ ...i, metadata: { ...i.metadata } }))
  }

  subscribe (service: string, onChange: (list: Instance[]) => void): () => void {
    const watch = this.#watch(service)
    watch.listeners.add(onChange)
    return () => { watch.listeners.delete(onChange) }
  }

  /** Resolves with the list once the first answer for `service` arrived (or after `timeoutMs` with what is known). */
  async ready (service: string, timeoutMs: number): Promise<Instance[]> {
    const watch = this.#watch(service)
    if (watch.list === undefined) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, timeoutMs)
        timer.unref()
        function done (): void { clearTimeout(timer); watch.waiters.delete(done); resolve() }
        watch.waiters.add(done)
      })
    }
    return this.instances(service)
  }

  describe (): Record<string, unknown> {
    const services: Record<string, unknown> = {}
    for (const w of this.#watches.values()) {
      services[w.service] = { instances: w.list?.length ?? null, clusters: w.clusters, cacheMillis: w.cacheMillis ?? null, updatedAt: w.updatedAt, lastSource: w.lastSource, reachProtectionThreshold: w.reachProtectionThreshold, subscribers: w.listeners.size }
    }
    return { services, updates: { ...this.counts }, udpPort: this.#o.bridge.udpPort() ?? null }
  }

  /** The poll period the server announced (cacheMillis), if any answer arrived yet. */
  cacheMillis (): number | undefined {
    for (const w of this.#watches.values()) if (w.cacheMillis !== undefined) return w.cacheMillis
    return undefined
  }

  close (): void {
    this.#closed = true
    for (const w of this.#watches.values()) {
      w.listeners.clear()
      for (const resolve of w.waiters) resolve()
      try { this.#o.bridge.client.unSubscribe({ serviceName: w.service, groupName: this.#o.group, clusters: w.clusters }, w.sdkListener) } catch {}
    }
  }
}
