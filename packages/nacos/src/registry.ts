import {
  InvalidOptionError, parseWarmupMetadata, RegistryError, serviceKey, TimeoutError, withTimeout,
  type Discovery, type Instance, type Registry
} from '@lameduck/core'
import { Heartbeats } from './heartbeats.ts'
import { resolveOptions, type NacosRegistryOptions, type ResolvedNacosOptions } from './options.ts'
import { createSdkBridge, type SdkBridge } from './sdk-bridge.ts'
import { sdkLogger } from './sdk-logger.ts'
import type { NamingClient, SdkInstance } from './sdk-types.ts'
import { ServiceCache } from './service-cache.ts'

export interface NacosDiscovery extends Discovery {
  /** Waits until the naming client has started (its UDP push receiver is bound). */
  ready(): Promise<void>
  /** Watches `service` and resolves with its instances once the first answer arrived (or after readyTimeoutMs). */
  load(service: string): Promise<Instance[]>
  describe(): Record<string, unknown>
  /** Stops watching and closes the naming client. */
  close(): Promise<void>
  /** The underlying nacos naming client (created on first use). */
  readonly client: NamingClient
}

export interface NacosRegistry extends Registry, NacosDiscovery {
  describe(): Record<string, unknown>
}

interface Registered { instance: Instance, sdkInstance: SdkInstance, groupedService: string }

const PRESERVED_BEAT_INTERVAL = 'preserved.heart.beat.interval'

function checkInstance (instance: Instance): void {
  if (typeof instance !== 'object' || instance === null) throw new InvalidOptionError('instance', 'must be an object { id, service, host, port, status, metadata }')
  if (typeof instance.service !== 'string' || instance.service === '' || instance.service.includes('@@')) {
    throw new InvalidOptionError('instance.service', `must be a non-empty Nacos service name without '@@', got ${JSON.stringify(instance.service)}`)
  }
  if (typeof instance.host !== 'string' || instance.host === '') throw new InvalidOptionError('instance.host', `must be the advertised IP, got ${JSON.stringify(instance.host)}`)
  if (!Number.isInteger(instance.port) || instance.port < 1 || instance.port > 65535) throw new InvalidOptionError('instance.port', `must be a port from 1 to 65535, got ${String(instance.port)}`)
}

function createNacos (options: NacosRegistryOptions, factory: string): NacosRegistry {
  const o: ResolvedNacosOptions = resolveOptions(options, factory)
  const log = o.logger
  let bridge: SdkBridge | null = null
  let cache: ServiceCache | null = null
  let heartbeats: Heartbeats | null = null
  let closing: Promise<void> | null = null
  let lastError: { operation: string, message: string, at: number } | null = null
  const registered = new Map<string, Registered>()
  // One instance's register/deregister calls run one at a time, in the order issued: the
  // SDK's calls cannot be cancelled, so a caller that gave up on a slow DELETE must not
  // see the register it sends next land first (and the late DELETE undo it).
  const locks = new Map<string, Promise<void>>()
  const exclusive = (key: string, signal: AbortSignal | undefined, fn: () => Promise<void>): Promise<void> => {
    const run = (locks.get(key) ?? Promise.resolve()).then(() => {
      signal?.throwIfAborted() // the caller gave up while it waited its turn: never send it
      return fn()
    })
    const tail = run.then(() => {}, () => {})
    locks.set(key, tail)
    tail.then(() => { if (locks.get(key) === tail) locks.delete(key) }, () => {})
    return run
  }

  // The client binds a UDP socket when created: do it on first use, not at configuration time.
  const sdk = (): { bridge: SdkBridge, cache: ServiceCache, heartbeats: Heartbeats } => {
    if (bridge === null) {
      const clientOptions = { ...o.client, logger: o.client.logger ?? sdkLogger(log), namespace: o.namespace, ...(o.serverList === undefined ? {} : { serverList: [...o.serverList] }) }
      const b = createSdkBridge(clientOptions as Parameters<typeof createSdkBridge>[0], log)
      bridge = b
      cache = new ServiceCache({ bridge: b, group: o.group, clusters: o.clusters.join(','), logger: log })
      heartbeats = new Heartbeats({ send: (service, beat) => b.sendBeat(service, beat), logger: log, clock: o.clock })
    }
    return { bridge, cache: cache!, heartbeats: heartbeats! }
  }

  const started = async (b: SdkBridge): Promise<void> => {
    await withTimeout(b.ready(), o.readyTimeoutMs, () => new TimeoutError('nacos naming client start', o.readyTimeoutMs))
  }

  const fail = (operation: string, where: string, err: unknown): RegistryError => {
    const message = `${where}: ${err instanceof Error ? err.message : String(err)}`
    lastError = { operation, message, at: Date.now() }
    return new RegistryError(operation, message, { cause: err })
  }

  const keyOf = (instance: Instance): string => `${serviceKey(instance.service)}|${instance.host}|${instance.port}`

  const target = (instance: Instance): Registered & { key: string } => {
    const { weight } = parseWarmupMetadata(instance.metadata)
    const nacosWeight = o.nacosWeight(weight)
    if (typeof nacosWeight !== 'number' || !Number.isFinite(nacosWeight) || nacosWeight < 0 || nacosWeight > 10_000) {
      throw new InvalidOptionError('nacosWeight', `must give a Nacos weight from 0 to 10000; gave ${String(nacosWeight)} for weight ${weight}`)
    }
    // The SDK turns weight 0 into 1 (`weight || 1`); a disabled instance gets no traffic, which is what 0 means.
    const enabled = instance.status === 'UP' && nacosWeight > 0
    const sdkInstance: SdkInstance = {
      ip: instance.host,
      port: instance.port,
      weight: nacosWeight > 0 ? nacosWeight : 1,
      healthy: instance.status !== 'DOWN',
      enabled,
      ephemeral: true,
      clusterName: o.cluster,
      metadata: { ...instance.metadata }
    }
    return { key: keyOf(instance), instance, sdkInstance, groupedService: `${o.group}@@${instance.service}` }
  }

  const assertOpen = (operation: string): void => {
    if (closing !== null) throw new RegistryError(operation, 'the Nacos registry is closed')
  }

  const deregisterOne = async (t: Registered & { key: string }): Promise<void> => {
    const { bridge: b, heartbeats: beats } = sdk()
    // Stop beating first, and wait for a beat in flight: a beat that lands after the
    // DELETE makes a real server register the instance again.
    await beats.stop(t.key)
    try {
      await b.client.deregisterInstance(t.instance.service, t.sdkInstance, o.group)
    } catch (err) {
      throw fail('deregister', `${t.instance.host}:${t.instance.port} from ${t.groupedService}`, err)
    }
    registered.delete(t.key)
    log.info({ nacos: { service: t.groupedService, ip: t.sdkInstance.ip, port: t.sdkInstance.port } }, `nacos: deregistered ${t.sdkInstance.ip}:${t.sdkInstance.port} from ${t.groupedService}`)
  }

  const registerOne = async (t: Registered & { key: string }): Promise<void> => {
    const { instance } = t
    const { bridge: b, heartbeats: beats } = sdk()
    await started(b)
    const reregister = async (): Promise<void> => { await b.client.registerInstance(instance.service, t.sdkInstance, o.group) }
    try {
      await reregister()
    } catch (err) {
      throw fail('register', `${instance.host}:${instance.port} in ${t.groupedService}`, err)
    }
    registered.set(t.key, t)
    if (b.ownBeats) {
      const preserved = Number(instance.metadata[PRESERVED_BEAT_INTERVAL])
      await beats.start(t.key, {
        groupedService: t.groupedService,
        beat: { serviceName: t.groupedService, ip: t.sdkInstance.ip, port: t.sdkInstance.port, cluster: o.cluster, weight: t.sdkInstance.weight, metadata: t.sdkInstance.metadata, ephemeral: true },
        reregister,
        intervalMs: preserved > 0 ? preserved : o.beatIntervalMs
      })
    }
    log.info({ nacos: { service: t.groupedService, ip: t.sdkInstance.ip, port: t.sdkInstance.port, weight: t.sdkInstance.weight, enabled: t.sdkInstance.enabled, cluster: o.cluster, namespace: o.namespace } },
      `nacos: registered ${t.sdkInstance.ip}:${t.sdkInstance.port} in ${t.groupedService}`)
  }

  const registry: NacosRegistry = {
    get client () { return sdk().bridge.client },

    async register (instance, call) {
      assertOpen('register')
      checkInstance(instance)
      const t = target(instance)
      await exclusive(t.key, call?.signal, () => registerOne(t))
    },

    async deregister (instance, call) {
      assertOpen('deregister')
      checkInstance(instance)
      // Deregister what was registered (same cluster, same weight); else what this instance would be.
      const key = keyOf(instance)
      await exclusive(key, call?.signal, async () => {
        const known = registered.get(key)
        await deregisterOne(known === undefined ? target(instance) : { ...known, key })
      })
    },

    instances (service) {
      if (closing !== null) return []
      return sdk().cache.instances(service)
    },

    subscribe (service, onChange) {
      if (closing !== null) return () => {}
      return sdk().cache.subscribe(service, onChange)
    },

    async ready () {
      assertOpen('ready')
      await started(sdk().bridge)
    },

    async load (service) {
      assertOpen('load')
      const { bridge: b, cache: c } = sdk()
      await started(b)
      return await c.ready(service, o.readyTimeoutMs)
    },

    describe () {
      return {
        type: 'nacos',
        serverList: o.serverList?.join(',') ?? null,
        namespace: o.namespace,
        group: o.group,
        cluster: o.cluster,
        clusters: o.clusters,
        sdk: bridge === null ? null : { ownBeats: bridge.ownBeats, observing: bridge.observing },
        registered: [...registered.entries()].map(([key, r]) => ({
          service: r.instance.service, host: r.sdkInstance.ip, port: r.sdkInstance.port, weight: r.sdkInstance.weight, enabled: r.sdkInstance.enabled, beats: heartbeats?.describe(key) ?? null
        })),
        discovery: cache?.describe() ?? null,
        lastError,
        closed: closing !== null
      }
    },

    close () {
      closing ??= (async () => {
        if (bridge === null) return
        // The client's close() does not deregister: do it, so consumers are not
        // left with an instance that only expires 15-30 s later. Calls still running
        // finish first, so a register that lands during close is deregistered too.
        await Promise.all(locks.values())
        const results = await Promise.allSettled([...registered.entries()].map(([key, r]) => deregisterOne({ ...r, key })))
        for (const r of results) if (r.status === 'rejected') log.warn({ err: r.reason }, `nacos: deregistration on close failed: ${String((r.reason as Error)?.message ?? r.reason)}`)
        await heartbeats!.stopAll()
        cache!.close()
        await bridge.close()
      })()
      return closing
    }
  }
  return registry
}

/** A lameduck Registry and Discovery over the nacos naming client. */
export function nacosRegistry (options: NacosRegistryOptions): NacosRegistry {
  return createNacos(options, 'nacosRegistry')
}

/** Discovery only, for consumers: watches services, never registers. */
export function nacosDiscovery (options: NacosRegistryOptions): NacosDiscovery {
  const r = createNacos(options, 'nacosDiscovery')
  return {
    get client () { return r.client },
    instances: (service) => r.instances(service),
    subscribe: (service, onChange) => r.subscribe(service, onChange),
    ready: () => r.ready(),
    load: (service) => r.load(service),
    describe: () => ({ ...r.describe(), registered: undefined, role: 'discovery' }),
    close: () => r.close()
  }
}
