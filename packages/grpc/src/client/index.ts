// The gRPC consumer side: lameduckResolver({ discovery }) makes `lameduck://<name>/<service>`
// targets resolve through a lameduck Discovery (Eureka, Nacos, Kubernetes EndpointSlices,
// memory) with the 'lameduck' policy: warmup-weighted picks, leaving instances dropped.
import { serviceKey, truncateText } from '@lameduck/core'
import { InvalidOptionError } from '@lameduck/core'
import { registerLameduckPolicy } from './load-balancer.ts'
import { resolveClientOptions, type LameduckResolverOptions } from './options.ts'
import { LAMEDUCK_SCHEME, registerLameduckScheme, sources } from './resolver.ts'
import { ServiceView } from './service-view.ts'

export { LB_POLICY as LAMEDUCK_LB_POLICY } from './load-balancer.ts'
export { LAMEDUCK_SCHEME } from './resolver.ts'
export type { LameduckResolverOptions } from './options.ts'

export interface ResolvedInstanceStats {
  id: string
  address: string
  weight: number
  /** Weight used for picking right now: configured x warmup factor. */
  effectiveWeight: number
  warming: boolean
  /** It answered a call with a leaving x-lameduck-state: no longer picked. */
  leaving: boolean
}

export interface LameduckResolver {
  /** The target's authority. */
  readonly name: string
  /** The channel target for a service: `lameduck://<name>/<service>`. */
  target(service: string): string
  /** What the resolver knows of a service: its instances, weights and leaving marks. */
  stats(service: string): ResolvedInstanceStats[]
  /** Unregisters the name and stops discovery subscriptions; channels on it get no more updates. */
  close(): void
}

/**
 * Registers (once per process) the `lameduck:` scheme and the 'lameduck' policy with
 * @grpc/grpc-js, and makes `discovery` available under `name`:
 * `new Client(resolver.target('orders'), credentials)`.
 */
export function lameduckResolver (options: LameduckResolverOptions): LameduckResolver {
  const o = resolveClientOptions(options)
  if (sources.has(o.name)) throw new InvalidOptionError('name', `a lameduckResolver named '${o.name}' is already open in this process; close it first or pick another name`)
  registerLameduckPolicy()
  registerLameduckScheme()
  const views = new Map<string, ServiceView>()
  const view = (service: string): ServiceView => {
    const key = serviceKey(service)
    let v = views.get(key)
    if (v === undefined) views.set(key, v = new ServiceView(key, o))
    return v
  }
  sources.set(o.name, { view })
  return {
    name: o.name,
    target (service) {
      if (typeof service !== 'string' || !/^[a-z0-9][a-z0-9._-]*$/i.test(service)) throw new InvalidOptionError('service', `must be a service name (letters, digits, '.', '_' or '-'), got ${truncateText(String(service), 100)}`)
      return `${LAMEDUCK_SCHEME}://${o.name}/${service}`
    },
    stats (service) {
      const v = views.get(serviceKey(service))
      if (v === undefined) return []
      const now = v.now()
      return v.all().map((e) => ({ id: e.id, address: e.key, weight: e.weight, effectiveWeight: v.weightOf(e, now), warming: now - e.rampStartedAt < v.windowOf(e), leaving: e.leaving }))
    },
    close () {
      if (sources.get(o.name)?.view === view) sources.delete(o.name)
      for (const v of views.values()) v.close()
      views.clear()
    }
  }
}
