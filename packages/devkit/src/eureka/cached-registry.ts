// The registry and its two-level response cache, wired as ResponseCacheImpl is: every
// change invalidates the read-write entries it touches (all apps, the delta, the app,
// its VIPs), and a missing entry is generated from the registry in JSON or XML.
import { encodeApplication, encodeApplications, type Format } from './codec.ts'
import { InstanceRegistry } from './instance-registry.ts'
import type { ResolvedEurekaServerOptions } from './options.ts'
import { ResponseCache } from './response-cache.ts'

export function createCachedRegistry (o: ResolvedEurekaServerOptions): { registry: InstanceRegistry, cache: ResponseCache } {
  let versionDelta = 0
  const registry: InstanceRegistry = new InstanceRegistry({
    clock: o.clock,
    leaseExpiryBug: o.leaseExpiryBug,
    defaultLeaseDurationMs: o.defaultLeaseDurationMs,
    retentionTimeInMSInDeltaQueue: o.retentionTimeInMSInDeltaQueue,
    selfPreservation: o.selfPreservation,
    renewalPercentThreshold: o.renewalPercentThreshold,
    expectedClientRenewalIntervalSeconds: o.expectedClientRenewalIntervalSeconds,
    onChange: (app, vip, svip) => cache.invalidate(keysFor(app, vip, svip))
  })
  const cache: ResponseCache = new ResponseCache({
    clock: o.clock,
    useReadOnlyCache: o.useReadOnlyCache,
    updateIntervalMs: o.responseCacheUpdateIntervalMs,
    autoExpirationMs: o.responseCacheAutoExpirationMs,
    generate (key) {
      const [format, kind, name] = key.split(':', 3) as [Format, string, string]
      switch (kind) {
        case 'ALL_APPS': return encodeApplications(registry.applications(), format)
        case 'ALL_APPS_DELTA': return encodeApplications(registry.deltas(++versionDelta), format)
        case 'APP': {
          const app = registry.application(name)
          return app === undefined ? null : encodeApplication(app, format)
        }
        default: return encodeApplications(registry.applicationsForVip(name, kind === 'SVIP'), format)
      }
    }
  })
  return { registry, cache }
}

function keysFor (app: string, vip: string | undefined, svip: string | undefined): string[] {
  const names = ['ALL_APPS', 'ALL_APPS_DELTA', `APP:${app}`]
  for (const v of [vip, ...(vip?.split(',') ?? [])]) if (v) names.push(`VIP:${v}`)
  for (const v of [svip, ...(svip?.split(',') ?? [])]) if (v) names.push(`SVIP:${v}`)
  return names.flatMap((n) => [`json:${n}`, `xml:${n}`])
}
