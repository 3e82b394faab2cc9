// The server-side InstanceInfo: what a registration body becomes, and the
// leases that hold it. Field names and defaults follow Netflix Eureka's
// InstanceInfo / Lease so the JSON we write is what real clients already parse.

export const STATUSES = ['UP', 'DOWN', 'STARTING', 'OUT_OF_SERVICE', 'UNKNOWN'] as const
export type EurekaStatus = typeof STATUSES[number]
export type ActionType = 'ADDED' | 'MODIFIED' | 'DELETED'

export const DEFAULT_DATA_CENTER_CLASS = 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo'
export const AMAZON_DATA_CENTER_CLASS = 'com.netflix.appinfo.AmazonInfo'
/** Real servers write this placeholder for an empty metadata map. */
export const EMPTY_METADATA_CLASS = 'java.util.Collections$EmptyMap'

// InstanceInfo / LeaseInfo defaults.
export const DEFAULT_PORT = 7001
export const DEFAULT_SECURE_PORT = 7002
export const DEFAULT_RENEWAL_INTERVAL_SECS = 30
export const DEFAULT_LEASE_DURATION_SECS = 90

/** The @Auto string fields, written after the fixed ones when present. */
export const AUTO_FIELDS = ['appGroupName', 'homePageUrl', 'statusPageUrl', 'healthCheckUrl', 'secureHealthCheckUrl', 'vipAddress', 'secureVipAddress', 'asgName'] as const
export type AutoField = typeof AUTO_FIELDS[number]

export interface DataCenterInfo {
  name: string
  metadata?: Record<string, string>
}

export interface InstanceInfo {
  /** The id used in URLs: instanceId, else (Amazon) metadata instance-id, else hostName. */
  id: string
  instanceId: string | undefined
  hostName: string
  /** Upper-case, like Eureka's InstanceInfo.Builder.setAppName. */
  app: string
  ipAddr: string
  sid: string | undefined
  status: EurekaStatus
  overriddenStatus: EurekaStatus
  port: number
  portEnabled: boolean
  securePort: number
  securePortEnabled: boolean
  countryId: number
  dataCenterInfo: DataCenterInfo
  /** As the registrant sent it; only the two intervals matter to the server. */
  leaseInfo: { renewalIntervalInSecs: number, durationInSecs: number } | undefined
  metadata: Record<string, string>
  auto: Partial<Record<AutoField, string>>
  isCoordinatingDiscoveryServer: boolean
  lastUpdatedTimestamp: number
  lastDirtyTimestamp: number
  actionType: ActionType | undefined
}

/**
 * A lease on one instance. `leaseExpiryBug` reproduces Eureka's Lease.renew(),
 * which stores now + duration as the last update, so a lease expires 2 x duration
 * after the last heartbeat ("will not be fixed" upstream).
 */
export class Lease {
  holder: InstanceInfo
  readonly registrationTimestamp: number
  lastUpdateTimestamp: number
  evictionTimestamp = 0
  serviceUpTimestamp = 0
  readonly durationMs: number
  readonly #expiryBug: boolean

  constructor (holder: InstanceInfo, durationSecs: number, now: number, expiryBug: boolean, defaultDurationMs: number) {
    this.holder = holder
    this.registrationTimestamp = now
    this.lastUpdateTimestamp = now
    this.durationMs = durationSecs > 0 ? durationSecs * 1000 : defaultDurationMs
    this.#expiryBug = expiryBug
  }

  renew (now: number): void {
    this.lastUpdateTimestamp = this.#expiryBug ? now + this.durationMs : now
  }

  cancel (now: number): void {
    if (this.evictionTimestamp <= 0) this.evictionTimestamp = now
  }

  serviceUp (now: number): void {
    if (this.serviceUpTimestamp === 0) this.serviceUpTimestamp = now
  }

  isExpired (now: number, additionalLeaseMs = 0): boolean {
    return this.evictionTimestamp > 0 || now > this.lastUpdateTimestamp + this.durationMs + additionalLeaseMs
  }
}

export function toStatus (value: unknown): EurekaStatus {
  const s = typeof value === 'string' ? value.toUpperCase() : ''
  return (STATUSES as readonly string[]).includes(s) ? s as EurekaStatus : 'UNKNOWN'
}

/** Like InstanceStatus.valueOf: exact names only, undefined otherwise. */
export function parseStatusStrict (value: string | null): EurekaStatus | undefined {
  return value !== null && (STATUSES as readonly string[]).includes(value) ? value as EurekaStatus : undefined
}

/** Eureka's reconcile hash code: "STATUS_count_" per status, sorted by status name. */
export function reconcileHashCode (instances: Iterable<{ status: EurekaStatus }>): string {
  const counts = new Map<string, number>()
  for (const i of instances) counts.set(i.status, (counts.get(i.status) ?? 0) + 1)
  return [...counts.keys()].sort().map((s) => `${s}_${counts.get(s)}_`).join('')
}
