// What a Nacos naming server holds: namespaces → grouped services → instances,
// and the ephemeral-instance lifecycle (beats, unhealthy, deleted).

export const DEFAULT_NAMESPACE = 'public'
export const DEFAULT_GROUP = 'DEFAULT_GROUP'
export const DEFAULT_CLUSTER = 'DEFAULT'
export const GROUP_SPLITTER = '@@'

/** Metadata keys a Nacos server reads per instance to override the heartbeat defaults. */
export const PRESERVED = {
  beatInterval: 'preserved.heart.beat.interval',
  beatTimeout: 'preserved.heart.beat.timeout',
  deleteTimeout: 'preserved.ip.delete.timeout'
} as const

export interface StoredInstance {
  ip: string
  port: number
  clusterName: string
  weight: number
  healthy: boolean
  enabled: boolean
  ephemeral: boolean
  metadata: Record<string, string>
  lastBeat: number
  /** Learnt from another cluster node (distro): that node checks its beats, not this one. */
  replica?: boolean
}

export interface StoredService {
  namespaceId: string
  groupName: string
  /** Grouped name, `GROUP@@name`: the form v1 clients use as the service identity. */
  name: string
  instances: Map<string, StoredInstance>
}

export interface HeartbeatDefaults {
  clientBeatIntervalMs: number
  heartBeatTimeoutMs: number
  ipDeleteTimeoutMs: number
}

export interface InstanceTimeouts { beatIntervalMs: number, beatTimeoutMs: number, deleteTimeoutMs: number }

export type ChangeReason = 'register' | 'update' | 'deregister' | 'unhealthy' | 'healthy' | 'expired' | 'beat-register'

export function instanceKey (ip: string, port: number, clusterName: string): string {
  return `${ip}#${port}#${clusterName}`
}

/** Per-instance heartbeat timings: `preserved.*` metadata wins over the server defaults. */
export function instanceTimeouts (instance: Pick<StoredInstance, 'metadata'>, defaults: HeartbeatDefaults): InstanceTimeouts {
  const read = (key: string, fallback: number): number => {
    const raw = instance.metadata[key]
    const n = raw === undefined ? Number.NaN : Number(raw)
    return Number.isFinite(n) && n > 0 ? n : fallback
  }
  return {
    beatIntervalMs: read(PRESERVED.beatInterval, defaults.clientBeatIntervalMs),
    beatTimeoutMs: read(PRESERVED.beatTimeout, defaults.heartBeatTimeoutMs),
    deleteTimeoutMs: read(PRESERVED.deleteTimeout, defaults.ipDeleteTimeoutMs)
  }
}

export interface NamingStoreOptions extends HeartbeatDefaults {
  now: () => number
  onChange: (service: StoredService, reason: ChangeReason, instance: StoredInstance) => void
  /** A beat renewed an instance (cluster nodes pass it on). */
  onBeat?: (service: StoredService, instance: StoredInstance) => void
}

/** A change as one cluster node passes it to the others (distro sync). */
export type DistroOp =
  | { kind: 'upsert', namespaceId: string, name: string, groupName: string, reason: ChangeReason, instance: StoredInstance }
  | { kind: 'remove', namespaceId: string, name: string, reason: ChangeReason, ip: string, port: number, clusterName: string }
  | { kind: 'beat', namespaceId: string, name: string, ip: string, port: number, clusterName: string }

export class NamingStore {
  readonly #services = new Map<string, StoredService>()
  readonly #options: NamingStoreOptions

  constructor (options: NamingStoreOptions) {
    this.#options = options
  }

  service (namespaceId: string, name: string): StoredService | undefined {
    return this.#services.get(`${namespaceId}>${name}`)
  }

  services (namespaceId?: string): StoredService[] {
    const all = [...this.#services.values()]
    return namespaceId === undefined ? all : all.filter((s) => s.namespaceId === namespaceId)
  }

  find (namespaceId: string, name: string, ip: string, port: number, clusterName: string): StoredInstance | undefined {
    return this.service(namespaceId, name)?.instances.get(instanceKey(ip, port, clusterName))
  }

  /** Adds or overwrites (same ip, port and cluster) an instance. Registration counts as a beat. */
  register (namespaceId: string, name: string, groupName: string, input: Omit<StoredInstance, 'lastBeat'>, reason: ChangeReason = 'register'): StoredInstance {
    const key = `${namespaceId}>${name}`
    let service = this.#services.get(key)
    if (service === undefined) {
      service = { namespaceId, groupName, name, instances: new Map() }
      this.#services.set(key, service)
    }
    const instance: StoredInstance = { ...input, metadata: { ...input.metadata }, lastBeat: this.#options.now() }
    const id = instanceKey(instance.ip, instance.port, instance.clusterName)
    const existed = service.instances.has(id)
    service.instances.set(id, instance)
    this.#options.onChange(service, existed && reason === 'register' ? 'update' : reason, instance)
    return instance
  }

  /** Applies an admin update (PUT /instance) to an existing instance. */
  update (namespaceId: string, name: string, ip: string, port: number, clusterName: string, patch: Partial<Pick<StoredInstance, 'weight' | 'enabled' | 'healthy' | 'metadata'>>): StoredInstance | undefined {
    const service = this.service(namespaceId, name)
    const instance = service?.instances.get(instanceKey(ip, port, clusterName))
    if (service === undefined || instance === undefined) return undefined
    Object.assign(instance, patch)
    this.#options.onChange(service, 'update', instance)
    return instance
  }

  deregister (namespaceId: string, name: string, ip: string, port: number, clusterName: string): boolean {
    const service = this.service(namespaceId, name)
    const id = instanceKey(ip, port, clusterName)
    const instance = service?.instances.get(id)
    if (service === undefined || instance === undefined) return false
    service.instances.delete(id)
    this.#options.onChange(service, 'deregister', instance)
    return true
  }

  /** Records a beat. A beat for an unhealthy instance makes it healthy again (and pushes). */
  beat (namespaceId: string, name: string, instance: StoredInstance): void {
    instance.lastBeat = this.#options.now()
    const service = this.service(namespaceId, name)
    if (service === undefined) return
    this.#options.onBeat?.(service, instance)
    if (!instance.healthy) {
      instance.healthy = true
      this.#options.onChange(service, 'healthy', instance)
    }
  }

  /** Applies a change another cluster node made. The instance is kept as a replica. */
  apply (op: DistroOp): void {
    if (op.kind === 'beat') {
      const instance = this.find(op.namespaceId, op.name, op.ip, op.port, op.clusterName)
      if (instance !== undefined) instance.lastBeat = this.#options.now()
      return
    }
    if (op.kind === 'remove') {
      const service = this.service(op.namespaceId, op.name)
      const id = instanceKey(op.ip, op.port, op.clusterName)
      const instance = service?.instances.get(id)
      if (service === undefined || instance === undefined) return
      service.instances.delete(id)
      this.#options.onChange(service, op.reason, instance)
      return
    }
    const key = `${op.namespaceId}>${op.name}`
    let service = this.#services.get(key)
    if (service === undefined) {
      service = { namespaceId: op.namespaceId, groupName: op.groupName, name: op.name, instances: new Map() }
      this.#services.set(key, service)
    }
    const instance: StoredInstance = { ...op.instance, metadata: { ...op.instance.metadata }, lastBeat: this.#options.now(), replica: true }
    service.instances.set(instanceKey(instance.ip, instance.port, instance.clusterName), instance)
    this.#options.onChange(service, op.reason, instance)
  }

  /** The periodic heartbeat check: ephemeral instances turn unhealthy, then are deleted. */
  check (): void {
    const now = this.#options.now()
    for (const service of this.#services.values()) {
      for (const [id, instance] of service.instances) {
        if (!instance.ephemeral || instance.replica === true) continue
        const t = instanceTimeouts(instance, this.#options)
        const silentMs = now - instance.lastBeat
        if (silentMs > t.deleteTimeoutMs) {
          service.instances.delete(id)
          this.#options.onChange(service, 'expired', instance)
        } else if (silentMs > t.beatTimeoutMs && instance.healthy) {
          instance.healthy = false
          this.#options.onChange(service, 'unhealthy', instance)
        }
      }
    }
  }

  clear (): void {
    this.#services.clear()
  }
}
