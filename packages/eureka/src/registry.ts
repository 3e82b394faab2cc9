import { rampedMetadata, RegistryError, WeightRamp, type Discovery, type Instance, type LifecycleObserver, type InstanceStatus, type Registry, type WindowParts } from '@lameduck/core'
import { EurekaJs, type EurekaInstanceJson, type EurekaJsClient } from './client.ts'
import { RegistryView } from './discovery.ts'
import { resolveDiscoveryOptions, resolveRegistryOptions, type EurekaDiscoveryOptions, type EurekaRegistryOptions, type ResolvedCommon } from './options.ts'
import { Registration } from './registration.ts'

export interface EurekaDiscovery extends Discovery {
  /** Resolves after the first successful registry fetch (instances() is empty until then). */
  ready(signal?: AbortSignal): Promise<void>
  /** Fetches the full registry now. */
  refresh(): Promise<void>
  describe(): Record<string, unknown>
  close(): Promise<void>
}

export interface EurekaRegistry extends Registry, EurekaDiscovery {
  /** Status override through the REST API: 'OUT_OF_SERVICE' takes the instance out of traffic, 'UP' removes the override. */
  setStatus(instance: Instance, status: InstanceStatus): Promise<void>
  /** Merges metadata on the server (PUT .../metadata) and into later re-registrations. */
  updateMetadata(instance: Instance, metadata: Record<string, string>): Promise<void>
  /**
   * The propagation window this registry implies (the plugin uses it when its own
   * `windows` option is unset): eurekaWindows() of the `windows` option, with this
   * client's registryFetchInterval as the consumers' fetch interval unless given.
   */
  readonly windows: WindowParts
  /** The `weightRamp` option's observer (null when off); the plugin attaches it to the app's lifecycle. */
  readonly weightRamp: WeightRamp | null
  /** What the plugin attaches to the lifecycle besides its own observers: the weight ramp, when on. */
  readonly observers: readonly LifecycleObserver[]
  describe(): Record<string, unknown>
}

function discoveryClient (o: ResolvedCommon): () => EurekaJsClient {
  return () => new EurekaJs({
    ...o.clientBase,
    eureka: { ...(o.clientBase.eureka as object), registerWithEureka: false, fetchRegistry: true, registryFetchInterval: o.registryFetchIntervalMs },
    instance: {}
  })
}

function createView (o: ResolvedCommon): RegistryView {
  return new RegistryView({
    logger: o.logger,
    preferIpAddress: o.preferIpAddress,
    registryFetchIntervalMs: o.registryFetchIntervalMs,
    createClient: discoveryClient(o)
  })
}

/**
 * A lameduck Registry and Discovery over eureka-js-client. Registration is per
 * instance (created at register()); discovery starts fetching the registry on
 * the first instances()/subscribe()/ready() call.
 */
export function eurekaRegistry (options: EurekaRegistryOptions): EurekaRegistry {
  const o = resolveRegistryOptions(options)
  const view = createView(o)
  const registrations = new Map<string, Registration>()
  let closed = false
  // Each step merges `weight` into the instance's metadata on the server (and into later re-registrations).
  const ramp = o.weightRamp === null
    ? null
    : new WeightRamp(o.weightRamp, (instance, weight) => registration(instance, 'metadata').updateMetadata(instance, { weight: String(weight) }), o.logger)

  /** The registration carries the ramp's weight for it (the first step, or the one reached). */
  function ramped (instance: Instance): Instance {
    const weight = ramp?.weightFor(instance) ?? null
    return weight === null ? instance : { ...instance, metadata: rampedMetadata(instance.metadata, weight) }
  }

  function registration (instance: Instance, op: string): Registration {
    if (closed) throw new RegistryError(op, 'the registry is closed')
    const key = `${instance.service.toUpperCase()}/${instance.id}`
    let r = registrations.get(key)
    if (r === undefined) {
      r = createRegistration(instance.id, o)
      registrations.set(key, r)
    }
    return r
  }

  return {
    async register (instance, call) { return registration(instance, 'register').register(ramped(instance), call?.signal) },
    async deregister (instance, call) { return registration(instance, 'deregister').deregister(instance, call?.signal) },
    async setStatus (instance, status) { return registration(instance, 'status').setStatus(instance, status) },
    async updateMetadata (instance, metadata) { return registration(instance, 'metadata').updateMetadata(instance, metadata) },
    instances: (service) => view.instances(service),
    subscribe: (service, onChange) => view.subscribe(service, onChange),
    ready: (signal) => view.ready(signal),
    refresh: () => view.refresh(),
    windows: o.windows,
    weightRamp: ramp,
    observers: ramp === null ? [] : [ramp],
    async close () {
      if (closed) return
      closed = true
      view.close()
      await Promise.all([...registrations.values()].map((r) => r.close()))
    },
    describe () {
      return {
        type: 'eureka',
        urls: o.urls,
        offlineMode: o.offlineMode,
        heartbeatIntervalMs: o.heartbeatIntervalMs,
        registryFetchIntervalMs: o.registryFetchIntervalMs,
        instances: [...registrations.values()].map((r) => r.describe()),
        weightRamp: ramp?.describe() ?? null,
        discovery: view.describe()
      }
    }
  }
}

/** One instance's registration: heartbeats driven by the adapter, fetching left to the discovery view. */
function createRegistration (id: string, o: ReturnType<typeof resolveRegistryOptions>): Registration {
  return new Registration(id, {
    offlineMode: o.offlineMode,
    registerTimeoutMs: o.registerTimeoutMs,
    backoff: o.backoff,
    logger: o.logger,
    clock: o.clock,
    heartbeatIntervalMs: o.heartbeatIntervalMs,
    leaseDurationSecs: o.leaseDurationSecs,
    userInstance: o.userInstance,
    createClient: (body: EurekaInstanceJson) => new EurekaJs({
      ...o.clientBase,
      eureka: { ...(o.clientBase.eureka as object), registerWithEureka: true, fetchRegistry: false },
      instance: body
    })
  })
}

/** Consumer only: fetches the registry (no registration). Starts fetching at once. */
export function eurekaDiscovery (options: EurekaDiscoveryOptions): EurekaDiscovery {
  const o = resolveDiscoveryOptions(options)
  const view = createView(o)
  view.start()
  return {
    instances: (service) => view.instances(service),
    subscribe: (service, onChange) => view.subscribe(service, onChange),
    ready: (signal) => view.ready(signal),
    refresh: () => view.refresh(),
    async close () { view.close() },
    describe: () => ({ type: 'eureka-discovery', urls: o.urls, registryFetchIntervalMs: o.registryFetchIntervalMs, ...view.describe() })
  }
}
