// The registry behind the local Eureka server: leases, the status-override map
// and its rule chain, the recently-changed (delta) queue, eviction and
// self-preservation. Modelled on Netflix Eureka's AbstractInstanceRegistry and
// PeerAwareInstanceRegistryImpl; replication to peers is the server's (peer-replication.ts).
import type { Clock } from '@lameduck/core'
import type { AppsView, AppView } from './codec.ts'
import { Lease, reconcileHashCode, type EurekaStatus, type InstanceInfo } from './instance-info.ts'

export interface InstanceRegistryOptions {
  clock: Clock
  leaseExpiryBug: boolean
  defaultLeaseDurationMs: number
  retentionTimeInMSInDeltaQueue: number
  selfPreservation: boolean
  renewalPercentThreshold: number
  expectedClientRenewalIntervalSeconds: number
  /** Called after every change, like ResponseCacheImpl.invalidate(app, vip, svip). */
  onChange: (app: string, vip: string | undefined, svip: string | undefined) => void
}

interface RecentlyChanged { at: number, lease: Lease }

export class InstanceRegistry {
  readonly #o: InstanceRegistryOptions
  readonly #apps = new Map<string, Map<string, Lease>>()
  readonly #overrides = new Map<string, EurekaStatus>()
  #recentlyChanged: RecentlyChanged[] = []
  // Self-preservation bookkeeping. Spring Cloud opens for traffic with one
  // expected client when it has no peers, so expiry works from the start.
  #expectedClients = 1
  #renewsThreshold = 0
  #renewsCurrent = 0
  #renewsLastMin = 0

  constructor (options: InstanceRegistryOptions) {
    this.#o = options
    this.#updateRenewsThreshold()
  }

  #now (): number { return this.#o.clock.now() }

  #changed (lease: Lease): void {
    this.#recentlyChanged.push({ at: this.#now(), lease })
    lease.holder.lastUpdatedTimestamp = this.#now()
    this.#o.onChange(lease.holder.app, lease.holder.auto.vipAddress, lease.holder.auto.secureVipAddress)
  }

  #lease (app: string, id: string): Lease | undefined {
    return this.#apps.get(app.toUpperCase())?.get(id)
  }

  /** AbstractInstanceRegistry.register, with the override rule chain. */
  register (registrant: InstanceInfo): void {
    const now = this.#now()
    let app = this.#apps.get(registrant.app)
    if (app === undefined) { app = new Map(); this.#apps.set(registrant.app, app) }
    const existing = app.get(registrant.id)
    if (existing !== undefined) {
      // A newer copy on the server wins over an older registration body.
      if (existing.holder.lastDirtyTimestamp > registrant.lastDirtyTimestamp) registrant = existing.holder
    } else if (this.#expectedClients > 0) {
      // Only once open for traffic with a count (AbstractInstanceRegistry.register).
      this.#expectedClients++
      this.#updateRenewsThreshold()
    }
    const lease = new Lease(registrant, registrant.leaseInfo?.durationInSecs ?? 0, now, this.#o.leaseExpiryBug, this.#o.defaultLeaseDurationMs)
    if (existing !== undefined) lease.serviceUpTimestamp = existing.serviceUpTimestamp
    app.set(registrant.id, lease)
    if (registrant.overriddenStatus !== 'UNKNOWN' && !this.#overrides.has(registrant.id)) {
      this.#overrides.set(registrant.id, registrant.overriddenStatus)
    }
    const fromMap = this.#overrides.get(registrant.id)
    if (fromMap !== undefined) registrant.overriddenStatus = fromMap
    registrant.status = this.#overriddenStatus(registrant, existing)
    if (registrant.status === 'UP') lease.serviceUp(now)
    registrant.actionType = 'ADDED'
    this.#changed(lease)
  }

  /**
   * The rule chain (first match wins): a DOWN/STARTING/UNKNOWN registrant keeps its
   * status; else an override from the map; else an existing lease's UP/OUT_OF_SERVICE;
   * else the registrant's own status.
   */
  #overriddenStatus (r: InstanceInfo, existing: Lease | undefined): EurekaStatus {
    if (r.status !== 'UP' && r.status !== 'OUT_OF_SERVICE') return r.status
    const override = this.#overrides.get(r.id)
    if (override !== undefined) return override
    const held = existing?.holder.status
    if (held === 'UP' || held === 'OUT_OF_SERVICE') return held
    return r.status
  }

  /** DELETE: false when unknown. Evictions come through here too. */
  cancel (app: string, id: string): boolean {
    const key = app.toUpperCase()
    const map = this.#apps.get(key)
    const lease = map?.get(id)
    this.#overrides.delete(id)
    if (map === undefined || lease === undefined) return false
    map.delete(id)
    if (map.size === 0) this.#apps.delete(key)
    lease.cancel(this.#now())
    lease.holder.actionType = 'DELETED'
    this.#changed(lease)
    if (this.#expectedClients > 0) { this.#expectedClients--; this.#updateRenewsThreshold() }
    return true
  }

  /** Heartbeat: false when the lease is unknown or its status became UNKNOWN (re-register required). */
  renew (app: string, id: string): boolean {
    const lease = this.#lease(app, id)
    if (lease === undefined) return false
    const status = this.#overriddenStatus(lease.holder, lease)
    if (status === 'UNKNOWN') return false
    // Like the real server: the status follows the rules but the caches are not invalidated.
    if (lease.holder.status !== status) lease.holder.status = status
    this.#renewsCurrent++
    lease.renew(this.#now())
    return true
  }

  /** PUT .../status?value=X: false when unknown. Sets the override; no-op if the status is already X. */
  statusUpdate (app: string, id: string, status: EurekaStatus, lastDirtyTimestamp: number | undefined): boolean {
    const lease = this.#lease(app, id)
    if (lease === undefined) return false
    const now = this.#now()
    lease.renew(now)
    const info = lease.holder
    if (info.status !== status) {
      if (status === 'UP') lease.serviceUp(now)
      this.#overrides.set(id, status)
      info.overriddenStatus = status
      info.status = status
      if (lastDirtyTimestamp !== undefined && lastDirtyTimestamp > info.lastDirtyTimestamp) info.lastDirtyTimestamp = lastDirtyTimestamp
      info.actionType = 'MODIFIED'
      this.#changed(lease)
    }
    return true
  }

  /** DELETE .../status[?value=X]: removes the override; the status becomes X (UNKNOWN without a value). */
  deleteStatusOverride (app: string, id: string, status: EurekaStatus, lastDirtyTimestamp: number | undefined): boolean {
    const lease = this.#lease(app, id)
    if (lease === undefined) return false
    lease.renew(this.#now())
    const had = this.#overrides.delete(id)
    if (had) {
      const info = lease.holder
      info.overriddenStatus = 'UNKNOWN'
      info.status = status
      if (lastDirtyTimestamp !== undefined && lastDirtyTimestamp > info.lastDirtyTimestamp) info.lastDirtyTimestamp = lastDirtyTimestamp
      info.actionType = 'MODIFIED'
      this.#changed(lease)
    }
    return true
  }

  /** PUT .../metadata?k=v: merges and re-registers the existing instance (InstanceResource.updateMetadata). */
  updateMetadata (app: string, id: string, entries: Iterable<[string, string]>): boolean {
    const lease = this.#visible(app, id)
    if (lease === undefined) return false
    const info = lease.holder
    for (const [k, v] of entries) info.metadata[k] = v
    info.lastDirtyTimestamp = this.#now()
    this.register(info)
    return true
  }

  /** The lease GET and status calls see: expired-but-not-evicted leases are hidden while expiry is enabled. */
  #visible (app: string, id: string): Lease | undefined {
    const lease = this.#lease(app, id)
    if (lease === undefined) return undefined
    if (this.isLeaseExpirationEnabled() && lease.isExpired(this.#now())) return undefined
    return lease
  }

  instance (app: string, id: string): Lease | undefined { return this.#visible(app, id) }

  instanceById (id: string): Lease | undefined {
    for (const app of this.#apps.keys()) {
      const lease = this.#visible(app, id)
      if (lease !== undefined) return lease
    }
    return undefined
  }

  /** Last dirty timestamp of a known lease, for the renew lastDirtyTimestamp check. */
  lastDirtyTimestamp (app: string, id: string): number | undefined {
    return this.#visible(app, id)?.holder.lastDirtyTimestamp
  }

  applications (): AppsView {
    const apps: AppView[] = []
    for (const [name, leases] of this.#apps) if (leases.size > 0) apps.push({ name, instances: [...leases.values()] })
    return { versionsDelta: 1, hashcode: this.#hashcode(), apps }
  }

  application (name: string): AppView | undefined {
    const leases = this.#apps.get(name.toUpperCase())
    return leases === undefined || leases.size === 0 ? undefined : { name: name.toUpperCase(), instances: [...leases.values()] }
  }

  /** Applications holding an instance whose (secure) VIP list contains `vip` (ResponseCacheImpl.getApplicationsForVip). */
  applicationsForVip (vip: string, secure: boolean): AppsView {
    const apps: AppView[] = []
    for (const [name, leases] of this.#apps) {
      const matching = [...leases.values()].filter((l) => (secure ? l.holder.auto.secureVipAddress : l.holder.auto.vipAddress)?.split(',').includes(vip))
      if (matching.length > 0) apps.push({ name, instances: matching })
    }
    return { versionsDelta: 1, hashcode: reconcileHashCode(apps.flatMap((a) => a.instances.map((l) => l.holder))), apps }
  }

  /** Every change still in the queue; the latest entry per instance wins, as Application.addInstance does. */
  deltas (version: number): AppsView {
    const byApp = new Map<string, Map<string, Lease>>()
    for (const { lease } of this.#recentlyChanged) {
      const name = lease.holder.app
      let app = byApp.get(name)
      if (app === undefined) { app = new Map(); byApp.set(name, app) }
      app.delete(lease.holder.id)
      app.set(lease.holder.id, lease)
    }
    const apps = [...byApp].map(([name, leases]) => ({ name, instances: [...leases.values()] }))
    return { versionsDelta: version, hashcode: this.#hashcode(), apps }
  }

  #hashcode (): string {
    const infos: InstanceInfo[] = []
    for (const leases of this.#apps.values()) for (const l of leases.values()) infos.push(l.holder)
    return reconcileHashCode(infos)
  }

  /** Drops delta items older than the retention time (the delta retention timer task). */
  pruneDeltas (): void {
    const cutoff = this.#now() - this.#o.retentionTimeInMSInDeltaQueue
    const keep = this.#recentlyChanged.findIndex((item) => item.at >= cutoff)
    this.#recentlyChanged = keep === -1 ? [] : this.#recentlyChanged.slice(keep)
  }

  get deltaQueueLength (): number { return this.#recentlyChanged.length }

  isLeaseExpirationEnabled (): boolean {
    if (!this.#o.selfPreservation) return true
    return this.#renewsThreshold > 0 && this.#renewsLastMin > this.#renewsThreshold
  }

  /** Evicts expired leases, at most (size - size x renewalPercentThreshold) per run, in random order. */
  evict (additionalLeaseMs: number): string[] {
    if (!this.isLeaseExpirationEnabled()) return []
    const now = this.#now()
    const expired: Lease[] = []
    let size = 0
    for (const leases of this.#apps.values()) {
      for (const lease of leases.values()) {
        size++
        if (lease.isExpired(now, additionalLeaseMs)) expired.push(lease)
      }
    }
    const limit = size - Math.trunc(size * this.#o.renewalPercentThreshold)
    const count = Math.min(expired.length, limit)
    const evicted: string[] = []
    for (let i = 0; i < count; i++) {
      const next = i + Math.floor(Math.random() * (expired.length - i))
      const picked = expired[next]!
      expired[next] = expired[i]!
      expired[i] = picked
      this.cancel(picked.holder.app, picked.holder.id)
      evicted.push(`${picked.holder.app}/${picked.holder.id}`)
    }
    return evicted
  }

  /** The renews-per-minute measurement rolls over (MeasuredRate). */
  rollRenewsMeasurement (): void {
    this.#renewsLastMin = this.#renewsCurrent
    this.#renewsCurrent = 0
  }

  /** The periodic renewal-threshold update task. */
  updateRenewalThreshold (): void {
    let count = 0
    for (const leases of this.#apps.values()) count += leases.size
    if (count > this.#o.renewalPercentThreshold * this.#expectedClients || !this.#o.selfPreservation) {
      this.#expectedClients = count
      this.#updateRenewsThreshold()
    }
  }

  #updateRenewsThreshold (): void {
    this.#renewsThreshold = Math.trunc(this.#expectedClients * (60 / this.#o.expectedClientRenewalIntervalSeconds) * this.#o.renewalPercentThreshold)
  }

  /** A plain snapshot of what the registry holds now (no caches): for tests and the CLI. */
  snapshot (): Array<{ app: string, id: string, status: EurekaStatus, overriddenStatus: EurekaStatus, hostName: string, port: number, metadata: Record<string, string> }> {
    const out = []
    for (const leases of this.#apps.values()) {
      for (const { holder: i } of leases.values()) {
        out.push({ app: i.app, id: i.id, status: i.status, overriddenStatus: i.overriddenStatus, hostName: i.hostName, port: i.port, metadata: { ...i.metadata } })
      }
    }
    return out
  }

  selfPreservationState (): { enabled: boolean, expectedClients: number, renewsThreshold: number, renewsLastMin: number, expiryEnabled: boolean } {
    return { enabled: this.#o.selfPreservation, expectedClients: this.#expectedClients, renewsThreshold: this.#renewsThreshold, renewsLastMin: this.#renewsLastMin, expiryEnabled: this.isLeaseExpirationEnabled() }
  }
}
