// Core Instance <-> Eureka instance JSON.
import { RegistryError, type Instance } from '@lameduck/core'
import type { EurekaInstanceJson } from './client.ts'

export const DEFAULT_DATA_CENTER = { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' }

/** eureka-js-client puts the id into URLs unescaped, so it must not need escaping. */
const SAFE_ID = /^[^\s/?#%\\]+$/

export interface RegistrationShape {
  heartbeatIntervalMs: number
  leaseDurationSecs: number
  userInstance: Record<string, unknown>
}

export function appName (service: string): string {
  return service.toUpperCase()
}

/** The registration body for `instance` (eureka-js-client forces status UP when it sends it). */
export function toEurekaInstance (instance: Instance, shape: RegistrationShape): EurekaInstanceJson {
  if (!SAFE_ID.test(instance.id)) {
    throw new RegistryError('register', `instance id '${instance.id}' cannot be used in Eureka URLs: use letters, digits and . - _ : only (no '/', '?', '#', '%' or spaces)`)
  }
  if (typeof instance.service !== 'string' || instance.service === '') throw new RegistryError('register', 'instance.service must be a non-empty string')
  const base = `http://${instance.host.includes(':') ? `[${instance.host}]` : instance.host}:${instance.port}`
  const user = shape.userInstance
  const userMetadata = typeof user.metadata === 'object' && user.metadata !== null ? user.metadata as Record<string, unknown> : {}
  return {
    homePageUrl: `${base}/`,
    statusPageUrl: `${base}/info`,
    vipAddress: instance.service,
    secureVipAddress: instance.service,
    dataCenterInfo: DEFAULT_DATA_CENTER,
    leaseInfo: {
      renewalIntervalInSecs: Math.max(1, Math.round(shape.heartbeatIntervalMs / 1000)),
      durationInSecs: shape.leaseDurationSecs
    },
    ...user,
    app: appName(instance.service),
    instanceId: instance.id,
    hostName: instance.host,
    ipAddr: instance.host,
    port: { $: instance.port, '@enabled': 'true' },
    metadata: { ...stringValues(userMetadata), ...instance.metadata },
    status: 'UP'
  }
}

/**
 * An instance from the client's cache as a core Instance, or undefined when it
 * is not routable (not UP, no usable port). Real servers send the metadata
 * placeholder '@class' for empty maps and old ones send port.$ as a string.
 */
export function fromEurekaInstance (raw: EurekaInstanceJson, service: string, preferIpAddress: boolean): Instance | undefined {
  if (typeof raw !== 'object' || raw === null || raw.status !== 'UP') return undefined
  const rawPort = typeof raw.port === 'object' && raw.port !== null ? raw.port.$ : raw.port
  // Numbers, or numeric strings from old servers; anything else (true, '', 70000) is no port.
  const port = typeof rawPort === 'number' || (typeof rawPort === 'string' && /^\s*\d+\s*$/.test(rawPort)) ? Number(rawPort) : Number.NaN
  if (!Number.isInteger(port) || port <= 0 || port > 65_535) return undefined
  const hostName = nonEmpty(raw.hostName)
  const ipAddr = nonEmpty(raw.ipAddr)
  const host = (preferIpAddress ? ipAddr ?? hostName : hostName ?? ipAddr) ?? ''
  if (host === '') return undefined
  const metadata = stringValues(typeof raw.metadata === 'object' && raw.metadata !== null && !Array.isArray(raw.metadata) ? raw.metadata : {})
  delete metadata['@class']
  return {
    id: nonEmpty(raw.instanceId) ?? hostName ?? `${host}:${port}`,
    service,
    host,
    port,
    status: 'UP',
    metadata
  }
}

function nonEmpty (v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined
}

function stringValues (o: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(o)) {
    if (v === null || v === undefined) continue
    out[k] = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v)
  }
  return out
}
