import { instanceTimeouts, type HeartbeatDefaults, type StoredInstance, type StoredService } from './naming-store.ts'

// The ServiceInfo JSON a Nacos 2.x/3.x server answers to GET /instance/list
// and pushes over UDP. v1 clients key their cache on `name` + `clusters`, so
// both are echoed exactly as requested.

export interface HostJson {
  instanceId: string
  ip: string
  port: number
  weight: number
  healthy: boolean
  enabled: boolean
  ephemeral: boolean
  clusterName: string
  serviceName: string
  metadata: Record<string, string>
  instanceHeartBeatInterval: number
  instanceHeartBeatTimeOut: number
  ipDeleteTimeout: number
  instanceIdGenerator: 'simple'
}

export interface ServiceInfoJson {
  name: string
  groupName: string
  clusters: string
  cacheMillis: number
  hosts: HostJson[]
  lastRefTime: number
  checksum: string
  allIPs: boolean
  reachProtectionThreshold: boolean
  valid: boolean
}

export interface ServiceInfoQuery {
  /** Grouped name, `GROUP@@name`. */
  name: string
  groupName: string
  /** Comma-separated cluster names as requested; '' means all clusters. */
  clusters: string
  healthyOnly: boolean
}

export interface ServiceInfoSettings extends HeartbeatDefaults {
  cacheMillis: number
  protectThreshold: number | false
  now: number
}

export function hostJson (service: Pick<StoredService, 'name'>, instance: StoredInstance, defaults: HeartbeatDefaults): HostJson {
  const t = instanceTimeouts(instance, defaults)
  return {
    instanceId: `${instance.ip}#${instance.port}#${instance.clusterName}#${service.name}`,
    ip: instance.ip,
    port: instance.port,
    weight: instance.weight,
    healthy: instance.healthy,
    enabled: instance.enabled,
    ephemeral: instance.ephemeral,
    clusterName: instance.clusterName,
    serviceName: service.name,
    metadata: { ...instance.metadata },
    instanceHeartBeatInterval: t.beatIntervalMs,
    instanceHeartBeatTimeOut: t.beatTimeoutMs,
    ipDeleteTimeout: t.deleteTimeoutMs,
    instanceIdGenerator: 'simple'
  }
}

/**
 * Selects hosts like ServiceUtil.selectInstancesWithHealthyProtection: cluster
 * filter, enabled only, then the protect threshold (when the healthy share is at
 * or below it, every host is reported healthy), then `healthyOnly`.
 */
export function buildServiceInfo (service: StoredService | undefined, query: ServiceInfoQuery, settings: ServiceInfoSettings): ServiceInfoJson {
  const wanted = new Set(query.clusters.split(',').map((c) => c.trim()).filter((c) => c !== ''))
  let hosts: HostJson[] = []
  let reachProtectionThreshold = false
  if (service !== undefined) {
    const selected = [...service.instances.values()].filter((i) => i.enabled && (wanted.size === 0 || wanted.has(i.clusterName)))
    hosts = selected.map((i) => hostJson(service, i, settings))
    const healthy = hosts.filter((h) => h.healthy).length
    if (settings.protectThreshold !== false && hosts.length > 0 && healthy / hosts.length <= settings.protectThreshold) {
      reachProtectionThreshold = true
      hosts = hosts.map((h) => ({ ...h, healthy: true }))
    }
    if (query.healthyOnly) hosts = hosts.filter((h) => h.healthy)
  }
  return {
    name: query.name,
    groupName: query.groupName,
    clusters: query.clusters,
    cacheMillis: settings.cacheMillis,
    hosts,
    lastRefTime: settings.now,
    checksum: '',
    allIPs: false,
    reachProtectionThreshold,
    valid: true
  }
}
