// kubernetesDiscovery(): core's Discovery over a Service's EndpointSlices, for
// @lameduck/balancer. One list + watch per Service, started for the services named in the
// options and for any other the first time it is asked for.
import { serviceKey } from '@lameduck/core'
import type { Discovery, Instance } from '@lameduck/core'
import { ApiClient } from './api-client.ts'
import { connect } from './connect.ts'
import type { ApiConnection } from './connection.ts'
import { dnsLabel, resolveOptions, type KubernetesDiscoveryOptions, type ResolvedOptions } from './options.ts'
import { ServiceWatch, type ServiceWatchStats } from './service-watch.ts'

export interface KubernetesDiscoveryStatus {
  adapter: 'kubernetes'
  server: string
  source: string
  namespace: string
  services: ServiceWatchStats[]
}

export class KubernetesDiscovery implements Discovery {
  readonly #o: ResolvedOptions
  readonly #api: ApiClient
  readonly #conn: ApiConnection
  readonly #watches = new Map<string, ServiceWatch>()
  #closed = false

  constructor (options: ResolvedOptions, conn: ApiConnection) {
    this.#o = options
    this.#conn = conn
    this.#api = new ApiClient(conn, { requestTimeoutMs: options.requestTimeoutMs, maxEventBytes: options.maxEventBytes })
    for (const s of options.services) this.#watch(s)
  }

  /** The namespace watched. */
  get namespace (): string { return this.#o.namespace }

  instances (service: string): Instance[] {
    const watch = this.#watch(service)
    return watch === undefined ? [] : watch.instances.map((i) => ({ ...i, metadata: { ...i.metadata } }))
  }

  subscribe (service: string, onChange: (list: Instance[]) => void): () => void {
    const watch = this.#watch(service)
    return watch === undefined ? () => {} : watch.subscribe(onChange)
  }

  /** Resolves once every Service watched so far (or `service`) has been listed. */
  async ready (service?: string, signal?: AbortSignal): Promise<void> {
    if (service !== undefined) this.#watch(service)
    const watches = service === undefined ? [...this.#watches.values()] : [this.#watches.get(serviceKey(service))!]
    await Promise.all(watches.map((w) => w.ready(signal)))
  }

  describe (): KubernetesDiscoveryStatus {
    return {
      adapter: 'kubernetes',
      server: this.#api.server,
      source: this.#conn.source,
      namespace: this.#o.namespace,
      services: [...this.#watches.values()].map((w) => w.stats)
    }
  }

  /** Stops every watch; the lists stay readable as they were. */
  close (): void {
    this.#closed = true
    for (const w of this.#watches.values()) w.close()
    this.#api.close()
  }

  #watch (service: string): ServiceWatch | undefined {
    const key = serviceKey(service)
    const existing = this.#watches.get(key)
    if (existing !== undefined || this.#closed) return existing
    const watch = new ServiceWatch(dnsLabel('service', key), this.#o, this.#api)
    this.#watches.set(key, watch)
    return watch
  }
}

/** A Discovery over Kubernetes EndpointSlices. Throws InvalidOptionError or KubernetesConfigError at once. */
export function kubernetesDiscovery (options: KubernetesDiscoveryOptions = {}): KubernetesDiscovery {
  const conn = connect(options as { kubeconfig?: unknown, inCluster?: unknown })
  return new KubernetesDiscovery(resolveOptions(options, conn.namespace), conn)
}
