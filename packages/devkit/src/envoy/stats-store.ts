// Envoy-style counters and gauges. Each stat keeps its raw dotted name (what `/stats`
// prints and `filter` matches), its tag-extracted name and tags (what
// `/stats/prometheus` prints), and a `used` flag for `usedonly`: set by the first
// change, so a gauge that went 1 -> 0 is still used and prints 0.

export type StatKind = 'counter' | 'gauge'

export class Stat {
  readonly name: string
  readonly kind: StatKind
  /** Tag-extracted name: `http.downstream_cx_active` for `http.ingress_http.downstream_cx_active`. */
  readonly tagName: string
  /** In extraction order, which is the Prometheus label order. */
  readonly tags: ReadonlyArray<readonly [string, string]>
  value = 0
  used = false

  constructor (name: string, kind: StatKind, tagName: string, tags: ReadonlyArray<readonly [string, string]>) {
    this.name = name
    this.kind = kind
    this.tagName = tagName
    this.tags = tags
  }

  inc (by = 1): void { this.value += by; this.used = true }
  dec (by = 1): void { this.value = Math.max(0, this.value - by); this.used = true }
  set (value: number): void { this.value = value; this.used = true }
}

export interface StatTags { tagName?: string, tags?: ReadonlyArray<readonly [string, string]> }

/** Envoy's stats_matcher: a stat it rejects is never created, so no admin output shows it. */
export type StatsMatcher = (name: string) => boolean

export class StatStore {
  #stats = new Map<string, Stat>()
  readonly #matcher: StatsMatcher

  constructor (matcher: StatsMatcher = () => true) {
    this.#matcher = matcher
  }

  counter (name: string, tags: StatTags = {}): Stat { return this.#get(name, 'counter', tags) }
  gauge (name: string, tags: StatTags = {}): Stat { return this.#get(name, 'gauge', tags) }

  get (name: string): Stat | undefined { return this.#stats.get(name) }

  /** All stats the matcher keeps, sorted by raw name (Envoy's text order for counters and gauges). */
  all (): Stat[] {
    return [...this.#stats.values()].filter((s) => this.#matcher(s.name)).sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
  }

  /** `/reset_counters`: zero every counter; the used flags stay. */
  resetCounters (): void {
    for (const stat of this.#stats.values()) if (stat.kind === 'counter') stat.value = 0
  }

  #get (name: string, kind: StatKind, { tagName = name, tags = [] }: StatTags): Stat {
    let stat = this.#stats.get(name)
    if (stat === undefined) {
      stat = new Stat(name, kind, tagName, tags)
      this.#stats.set(name, stat)
    }
    return stat
  }
}

// Istio's bootstrap inclusion list (pkg/bootstrap/config.go): these prefixes and
// suffixes, and `downstream_cx_active` only with EXIT_ON_ZERO_ACTIVE_CONNECTIONS
// ("Needed for draining"); everything else is rejected.
const ISTIO_PREFIXES = ['cluster_manager', 'listener_manager', 'server', 'cluster.xds-grpc', 'wasm']
const ISTIO_SUFFIXES = ['rbac.allowed', 'rbac.denied', 'shadow_allowed', 'shadow_denied']

export function istioStatsMatcher (exitOnZeroActiveConnections: boolean, inclusionSuffixes: readonly string[] = []): StatsMatcher {
  const suffixes = [...ISTIO_SUFFIXES, ...(exitOnZeroActiveConnections ? ['downstream_cx_active'] : []), ...inclusionSuffixes]
  return (name) => ISTIO_PREFIXES.some((p) => name.startsWith(p)) || suffixes.some((s) => name.endsWith(s))
}

/** `127.0.0.1:8080` -> `127.0.0.1_8080`, `::1` -> `[__1]_8080`: how Envoy names listener stats. */
export function listenerStatName (host: string, port: number): string {
  const ip = host.includes(':') ? `[${host.replaceAll(':', '_')}]` : host
  return `${ip}_${port}`
}

/**
 * The stats of one data-plane listener with an HTTP connection manager, with the tag
 * extraction of Envoy's well_known_names.cc (listener address, worker id, HCM prefix).
 */
export interface ListenerStats {
  cxActive: Stat
  cxTotal: Stat
  workerCxActive: Stat[]
  workerCxTotal: Stat[]
  httpCxActive: Stat
  httpCxTotal: Stat
  rqTotal: Stat
  rqActive: Stat
  drainClose: Stat
  rqXx: (cls: number) => Stat
}

export function listenerStats (store: StatStore, address: string, statPrefix: string, workers: number): ListenerStats {
  const addr = ['envoy_listener_address', address] as const
  const prefix = ['envoy_http_conn_manager_prefix', statPrefix] as const
  const worker = (i: number, stat: string): Stat => store.gauge(`listener.${address}.worker_${i}.${stat}`, {
    tagName: `listener.worker.${stat}`, tags: [['envoy_worker_id', String(i)], addr]
  })
  return {
    cxActive: store.gauge(`listener.${address}.downstream_cx_active`, { tagName: 'listener.downstream_cx_active', tags: [addr] }),
    cxTotal: store.counter(`listener.${address}.downstream_cx_total`, { tagName: 'listener.downstream_cx_total', tags: [addr] }),
    workerCxActive: Array.from({ length: workers }, (_, i) => worker(i, 'downstream_cx_active')),
    workerCxTotal: Array.from({ length: workers }, (_, i) => store.counter(`listener.${address}.worker_${i}.downstream_cx_total`, {
      tagName: 'listener.worker.downstream_cx_total', tags: [['envoy_worker_id', String(i)], addr]
    })),
    httpCxActive: store.gauge(`http.${statPrefix}.downstream_cx_active`, { tagName: 'http.downstream_cx_active', tags: [prefix] }),
    httpCxTotal: store.counter(`http.${statPrefix}.downstream_cx_total`, { tagName: 'http.downstream_cx_total', tags: [prefix] }),
    rqTotal: store.counter(`http.${statPrefix}.downstream_rq_total`, { tagName: 'http.downstream_rq_total', tags: [prefix] }),
    rqActive: store.gauge(`http.${statPrefix}.downstream_rq_active`, { tagName: 'http.downstream_rq_active', tags: [prefix] }),
    drainClose: store.counter(`http.${statPrefix}.downstream_cx_drain_close`, { tagName: 'http.downstream_cx_drain_close', tags: [prefix] }),
    rqXx: (cls) => store.counter(`http.${statPrefix}.downstream_rq_${cls}xx`, {
      tagName: 'http.downstream_rq_xx', tags: [['envoy_response_code_class', String(cls)], prefix]
    })
  }
}

/** The admin listener's stats: `listener.admin.*` is never tagged (LISTENER_ADDRESS excludes "admin"). */
export function adminStats (store: StatStore): { cxActive: Stat, mainThreadCxActive: Stat, httpCxActive: Stat, cxTotal: Stat, rqTotal: Stat } {
  const prefix = ['envoy_http_conn_manager_prefix', 'admin'] as const
  return {
    cxActive: store.gauge('listener.admin.downstream_cx_active'),
    mainThreadCxActive: store.gauge('listener.admin.main_thread.downstream_cx_active'),
    cxTotal: store.counter('listener.admin.downstream_cx_total'),
    httpCxActive: store.gauge('http.admin.downstream_cx_active', { tagName: 'http.downstream_cx_active', tags: [prefix] }),
    rqTotal: store.counter('http.admin.downstream_rq_total', { tagName: 'http.downstream_rq_total', tags: [prefix] })
  }
}
