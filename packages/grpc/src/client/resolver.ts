// The `lameduck:` name resolver for grpc-js: `lameduck://<name>/<service>` resolves
// through the Discovery registered under <name> by lameduckResolver(), and hands
// the 'lameduck' policy the service's view (weights, leaving marks).
import { serviceKey } from '@lameduck/core'
import { experimental, status, Metadata, type ChannelOptions } from '@grpc/grpc-js'
import { LB_POLICY, VIEW_KEY } from './load-balancer.ts'
import type { ServiceView } from './service-view.ts'

export const LAMEDUCK_SCHEME = 'lameduck'

/** What the resolver needs from a lameduckResolver() handle. */
export interface ViewSource {
  view(service: string): ServiceView
}

/** Live handles by name (the target's authority). */
export const sources = new Map<string, ViewSource>()

/** The service config the resolver gives when the channel sets none: the 'lameduck' policy. */
const SERVICE_CONFIG = { loadBalancingConfig: [{ [LB_POLICY]: {} }], methodConfig: [] }

class LameduckNameResolver implements experimental.Resolver {
  readonly #listener: experimental.ResolverListener
  readonly #service: string
  readonly #name: string
  readonly #giveConfig: boolean
  #release: (() => void) | undefined
  #view: ServiceView | undefined
  #scheduled = false
  #destroyed = false

  constructor (target: experimental.GrpcUri, listener: experimental.ResolverListener, options: ChannelOptions) {
    this.#listener = listener
    this.#name = target.authority ?? ''
    this.#service = serviceKey(target.path.replace(/^\/+/, ''))
    // A channel with its own service config keeps it (it may name the 'lameduck' policy itself).
    this.#giveConfig = options['grpc.service_config'] === undefined
  }

  updateResolution (): void {
    this.#destroyed = false
    if (this.#view === undefined && this.#release === undefined) this.#subscribe()
    this.#schedule()
  }

  #subscribe (): void {
    const source = sources.get(this.#name)
    if (source === undefined || this.#service === '') return
    this.#view = source.view(this.#service)
    this.#release = this.#view.acquire(() => this.#schedule())
  }

  /** Listener calls never run inside the constructor or updateResolution (grpc-js's rule). */
  #schedule (): void {
    if (this.#scheduled) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      if (!this.#destroyed) this.#report()
    })
  }

  #report (): void {
    const view = this.#view
    if (view === undefined) {
      const details = this.#service === ''
        ? `lameduck target has no service: use lameduck://${this.#name || '<name>'}/<service>`
        : `no lameduckResolver named '${this.#name}' in this process (create it before the client, and keep it open)`
      this.#listener(experimental.statusOrFromError({ code: status.UNAVAILABLE, details, metadata: new Metadata() }), {}, null, '')
      return
    }
    // Until discovery has listed the service once, calls wait (as for a first DNS answer).
    if (!view.hasList) return
    const endpoints = view.routable().map((e) => ({ addresses: [{ host: e.host, port: e.port }] }))
    this.#listener(experimental.statusOrFromValue(endpoints), { [VIEW_KEY]: view }, this.#giveConfig ? experimental.statusOrFromValue(SERVICE_CONFIG) : null, `lameduck: ${endpoints.length} instance(s) of '${view.service}'`)
  }

  destroy (): void {
    this.#destroyed = true
    this.#release?.()
    this.#release = undefined
    this.#view = undefined
  }

  static getDefaultAuthority (target: experimental.GrpcUri): string {
    return target.path.replace(/^\/+/, '')
  }
}

let registered = false

/** Registers the `lameduck:` scheme with grpc-js once per process. */
export function registerLameduckScheme (): void {
  if (registered) return
  experimental.registerResolver(LAMEDUCK_SCHEME, LameduckNameResolver)
  registered = true
}
