import {
  InvalidOptionError, METADATA_KEYS, parseWarmupMetadata, rampedMetadata, RegistryError, serviceKey, TimeoutError, WeightRamp, withTimeout,
  type Discovery, type Instance, type LifecycleObserver, type Registry
} from '@lameduck/core'
import { Heartbeats } from './heartbeats.ts'
import { resolveOptions, type NacosRegistryOptions, type ResolvedNacosOptions } from './options.ts'
import { createSdkBridge, type SdkBridge } from './sdk-bridge.ts'
import { sdkLogger } from './sdk-logger.ts'
import type { NamingClient, SdkInstance } from './sdk-types.ts'
import { ServiceCache } from './service-cache.ts'
import { keyedQueue, type KeyedQueue } from './keyed-queue.ts'
import { checkProtocol } from './protocol-check.ts'
import { createV3Bridge } from './v3-transport.ts'

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
  /** The `weightRamp` option's observer (null when off); the plugin attaches it to the app's lifecycle. */
  readonly weightRamp: WeightRamp | null
  /** What the plugin attaches to the lifecycle besides its own observers: the weight ramp, when on. */
  readonly observers: readonly LifecycleObserver[]
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

interface Target extends Registered { key: string }
interface Sdk { bridge: SdkBridge, cache: ServiceCache, heartbeats: Heartbeats }

/** One registry's state, shared by the steps below. */
interface NacosState {
  readonly o: ResolvedNacosOptions
  /** The SDK, created on first use; null until then. */
  current: Sdk | null
  /** The startup check that the servers serve the transport's client API (once). */
  protocol: Promise<void> | null
  closing: Promise<void> | null
  lastError: { operation: string, message: string, at: number } | null
  readonly registered: Map<string, Registered>
  readonly queue: KeyedQueue
  readonly ramp: WeightRamp | null
}

function createNacos (options: NacosRegistryOptions, factory: string): NacosRegistry {
  const o = resolveOptions(options, factory)
  if (factory === 'nacosDiscovery' && o.weightRamp !== null) throw new InvalidOptionError('weightRamp', 'is a provider option: pass it to nacosRegistry(), not nacosDiscovery()')
  // Each step registers the same registration again with the new weight (how Nacos updates an instance).
  const ramp = o.weightRamp === null ? null : new WeightRamp(o.weightRamp, (instance, weight) => reweigh(s, instance, weight), o.logger)
  const s: NacosState = { o, current: null, protocol: null, closing: null, lastError: null, registered: new Map(), queue: keyedQueue(), ramp }
  const assertOpen = (operation: string): void => {
    if (s.closing !== null) throw new RegistryError(operation, 'the Nacos registry is closed')
  }
  return {
    get client () { return sdk(s).bridge.client },

    async register (instance, call) {
      assertOpen('register')
      checkInstance(instance)
      const weight = s.ramp?.weightFor(instance) ?? null
      const t = weight === null ? target(o, instance) : target(o, { ...instance, metadata: rampedMetadata(instance.metadata, weight) }, weight)
      await s.queue.run(t.key, call?.signal, () => registerOne(s, t))
    },

    async deregister (instance, call) {
      assertOpen('deregister')
      checkInstance(instance)
      // Deregister what was registered (same cluster, same weight); else what this instance would be.
      const key = keyOf(instance)
      await s.queue.run(key, call?.signal, async () => {
        const known = s.registered.get(key)
        await deregisterOne(s, known === undefined ? target(o, instance) : { ...known, key })
      })
    },

    instances: (service) => s.closing !== null ? [] : sdk(s).cache.instances(service),
    subscribe: (service, onChange) => s.closing !== null ? () => {} : sdk(s).cache.subscribe(service, onChange),

    async ready () {
      assertOpen('ready')
      await started(s, sdk(s).bridge)
    },

    async load (service) {
      assertOpen('load')
      const { bridge, cache } = sdk(s)
      await started(s, bridge)
      return await cache.ready(service, o.readyTimeoutMs)
    },

    weightRamp: ramp,
    observers: ramp === null ? [] : [ramp],
    describe: () => describe(s),
    close: () => (s.closing ??= close(s))
  }
}

// The client binds a UDP socket when created: do it on first use, not at configuration time.
function sdk (s: NacosState): Sdk {
  if (s.current !== null) return s.current
  const { o } = s
  const log = o.logger
  let bridge: SdkBridge
  if (o.transport === 'v3') {
    bridge = createV3Bridge({ servers: o.serverList ?? [], namespace: o.namespace, ssl: o.client.ssl === true, pollIntervalMs: o.pollIntervalMs, requestTimeoutMs: o.readyTimeoutMs, logger: log })
  } else {
    const clientOptions = { ...o.client, logger: o.client.logger ?? sdkLogger(log), namespace: o.namespace, ...(o.serverList === undefined ? {} : { serverList: [...o.serverList] }) }
    bridge = createSdkBridge(clientOptions as Parameters<typeof createSdkBridge>[0], log, { push: o.push, servers: o.serverList })
  }
  s.current = {
    bridge,
    cache: new ServiceCache({ bridge, group: o.group, clusters: o.clusters.join(','), logger: log }),
    heartbeats: new Heartbeats({ send: (service, beat) => bridge.sendBeat(service, beat), logger: log, clock: o.clock })
  }
  return s.current
}

async function started (s: NacosState, bridge: SdkBridge): Promise<void> {
  const { o } = s
  // A server that refuses the transport's API (Nacos 3.2+ and the 1.x API) fails every start the same way: say so once, by name.
  // A server down at start proves nothing: ask again on the next call (a refusal, once seen, sticks).
  const check = s.protocol ??= o.serverList === undefined
    ? Promise.resolve()
    : checkProtocol(o.serverList, o.transport, o.client.ssl === true, o.readyTimeoutMs).then((answered) => { if (!answered && s.protocol === check) s.protocol = null })
  await check.catch((err: unknown) => {
    s.lastError = { operation: 'start', message: (err as Error).message, at: Date.now() }
    throw err
  })
  await withTimeout(bridge.ready(), o.readyTimeoutMs, () => new TimeoutError('nacos naming client start', o.readyTimeoutMs))
}

function fail (s: NacosState, operation: string, where: string, err: unknown): RegistryError {
  const message = `${where}: ${err instanceof Error ? err.message : String(err)}`
  s.lastError = { operation, message, at: Date.now() }
  return new RegistryError(operation, message, { cause: err })
}

function keyOf (instance: Instance): string {
  return `${serviceKey(instance.service)}|${instance.host}|${instance.port}`
}

/** The instance as the SDK registers it; `weight` (a ramp's) in place of the published lameduck weight. */
function target (o: ResolvedNacosOptions, instance: Instance, weight = parseWarmupMetadata(instance.metadata).weight): Target {
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

/**
 * A ramp step: the registration the lifecycle made, registered again with `weight` (beats carry it
 * too). Skipped when that registration is gone (deregistered, or replaced by a newer one).
 */
async function reweigh (s: NacosState, instance: Instance, weight: number): Promise<void> {
  const key = keyOf(instance)
  await s.queue.run(key, undefined, async () => {
    const known = s.registered.get(key)
    const at = METADATA_KEYS.registeredAt
    if (known === undefined || s.closing !== null || known.instance.metadata[at] !== instance.metadata[at]) return
    await registerOne(s, target(s.o, { ...instance, metadata: rampedMetadata(instance.metadata, weight) }, weight), 'weight')
  })
}

async function registerOne (s: NacosState, t: Target, what: 'registered' | 'weight' = 'registered'): Promise<void> {
  const { o } = s
  const { instance } = t
  const { bridge, heartbeats } = sdk(s)
  await started(s, bridge)
  const reregister = async (): Promise<void> => { await bridge.client.registerInstance(instance.service, t.sdkInstance, o.group) }
  try {
    await reregister()
  } catch (err) {
    throw fail(s, 'register', `${instance.host}:${instance.port} in ${t.groupedService}`, err)
  }
  s.registered.set(t.key, t)
  if (bridge.ownBeats) {
    const preserved = Number(instance.metadata[PRESERVED_BEAT_INTERVAL])
    await heartbeats.start(t.key, {
      groupedService: t.groupedService,
      beat: { serviceName: t.groupedService, ip: t.sdkInstance.ip, port: t.sdkInstance.port, cluster: o.cluster, weight: t.sdkInstance.weight, metadata: t.sdkInstance.metadata, ephemeral: true },
      reregister,
      intervalMs: preserved > 0 ? preserved : o.beatIntervalMs
    })
  }
  o.logger[what === 'registered' ? 'info' : 'debug']({ nacos: { service: t.groupedService, ip: t.sdkInstance.ip, port: t.sdkInstance.port, weight: t.sdkInstance.weight, enabled: t.sdkInstance.enabled, cluster: o.cluster, namespace: o.namespace } },
    what === 'registered' ? `nacos: registered ${t.sdkInstance.ip}:${t.sdkInstance.port} in ${t.groupedService}` : `nacos: weight ${t.sdkInstance.weight} for ${t.sdkInstance.ip}:${t.sdkInstance.port} in ${t.groupedService}`)
}

async function deregisterOne (s: NacosState, t: Target): Promise<void> {
  const { bridge, heartbeats } = sdk(s)
  // Stop beating first, and wait for a beat in flight: a beat that lands after the
  // DELETE makes a real server register the instance again.
  await heartbeats.stop(t.key)
  try {
    await bridge.client.deregisterInstance(t.instance.service, t.sdkInstance, s.o.group)
  } catch (err) {
    throw fail(s, 'deregister', `${t.instance.host}:${t.instance.port} from ${t.groupedService}`, err)
  }
  s.registered.delete(t.key)
  s.o.logger.info({ nacos: { service: t.groupedService, ip: t.sdkInstance.ip, port: t.sdkInstance.port } }, `nacos: deregistered ${t.sdkInstance.ip}:${t.sdkInstance.port} from ${t.groupedService}`)
}

function describe (s: NacosState): Record<string, unknown> {
  const { o, current } = s
  return {
    type: 'nacos',
    transport: o.transport,
    serverList: o.serverList?.join(',') ?? null,
    namespace: o.namespace,
    group: o.group,
    cluster: o.cluster,
    clusters: o.clusters,
    push: o.push,
    sdk: current === null ? null : { ownBeats: current.bridge.ownBeats, observing: current.bridge.observing, pushes: current.bridge.pushes() ?? null },
    registered: [...s.registered.entries()].map(([key, r]) => ({
      service: r.instance.service, host: r.sdkInstance.ip, port: r.sdkInstance.port, weight: r.sdkInstance.weight, enabled: r.sdkInstance.enabled, beats: current?.heartbeats.describe(key) ?? null
    })),
    discovery: current?.cache.describe() ?? null,
    weightRamp: s.ramp?.describe() ?? null,
    lastError: s.lastError,
    closed: s.closing !== null
  }
}

async function close (s: NacosState): Promise<void> {
  const { current } = s
  if (current === null) return
  // The client's close() does not deregister: do it, so consumers are not
  // left with an instance that only expires 15-30 s later. Calls still running
  // finish first, so a register that lands during close is deregistered too.
  await s.queue.idle()
  const results = await Promise.allSettled([...s.registered.entries()].map(([key, r]) => deregisterOne(s, { ...r, key })))
  for (const r of results) if (r.status === 'rejected') s.o.logger.warn({ err: r.reason }, `nacos: deregistration on close failed: ${String((r.reason as Error)?.message ?? r.reason)}`)
  await current.heartbeats.stopAll()
  current.cache.close()
  await current.bridge.close()
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
