// Writes registry payloads the way Eureka's codecs do: JSON like
// EurekaJacksonCodec (arrays always, port objects, @Auto fields as strings,
// the empty-metadata placeholder) and XML like the XStream codec, which a real
// server returns when the Accept header does not mention json.
import {
  AMAZON_DATA_CENTER_CLASS, AUTO_FIELDS, DEFAULT_DATA_CENTER_CLASS, DEFAULT_RENEWAL_INTERVAL_SECS,
  EMPTY_METADATA_CLASS, type InstanceInfo, type Lease
} from './instance-info.ts'

export type Format = 'json' | 'xml'

export interface AppView { name: string, instances: Lease[] }
export interface AppsView { versionsDelta: number, hashcode: string, apps: AppView[] }

/** One instance as Eureka's decorateInstanceInfo(lease) + InstanceInfoSerializer write it. */
export function instanceObject (lease: Lease): Record<string, unknown> {
  const i: InstanceInfo = lease.holder
  const o: Record<string, unknown> = {}
  if (i.instanceId !== undefined) o.instanceId = i.instanceId
  o.hostName = i.hostName
  o.app = i.app
  o.ipAddr = i.ipAddr
  if (i.sid !== undefined) o.sid = i.sid
  o.status = i.status
  o.overriddenStatus = i.overriddenStatus
  o.port = { $: i.port, '@enabled': String(i.portEnabled) }
  o.securePort = { $: i.securePort, '@enabled': String(i.securePortEnabled) }
  o.countryId = i.countryId
  const amazon = i.dataCenterInfo.name === 'Amazon'
  o.dataCenterInfo = amazon
    ? { '@class': AMAZON_DATA_CENTER_CLASS, name: i.dataCenterInfo.name, metadata: i.dataCenterInfo.metadata ?? {} }
    : { '@class': DEFAULT_DATA_CENTER_CLASS, name: i.dataCenterInfo.name }
  o.leaseInfo = {
    renewalIntervalInSecs: i.leaseInfo?.renewalIntervalInSecs ?? DEFAULT_RENEWAL_INTERVAL_SECS,
    durationInSecs: i.leaseInfo?.durationInSecs ?? Math.ceil(lease.durationMs / 1000),
    registrationTimestamp: lease.registrationTimestamp,
    lastRenewalTimestamp: lease.lastUpdateTimestamp,
    evictionTimestamp: lease.evictionTimestamp,
    serviceUpTimestamp: lease.serviceUpTimestamp
  }
  o.metadata = Object.keys(i.metadata).length === 0 ? { '@class': EMPTY_METADATA_CLASS } : { ...i.metadata }
  for (const field of AUTO_FIELDS) {
    if (field === 'asgName') continue
    const v = i.auto[field]
    if (v !== undefined) o[field] = v
  }
  o.isCoordinatingDiscoveryServer = String(i.isCoordinatingDiscoveryServer)
  o.lastUpdatedTimestamp = String(i.lastUpdatedTimestamp)
  o.lastDirtyTimestamp = String(i.lastDirtyTimestamp)
  if (i.actionType !== undefined) o.actionType = i.actionType
  if (i.auto.asgName !== undefined) o.asgName = i.auto.asgName
  return o
}

function appObject (app: AppView): Record<string, unknown> {
  return { name: app.name, instance: app.instances.map(instanceObject) }
}

export function encodeApplications (view: AppsView, format: Format): string {
  const root = {
    versions__delta: String(view.versionsDelta),
    apps__hashcode: view.hashcode,
    application: view.apps.map(appObject)
  }
  return format === 'json' ? JSON.stringify({ applications: root }) : xml('applications', root)
}

export function encodeApplication (app: AppView, format: Format): string {
  return format === 'json' ? JSON.stringify({ application: appObject(app) }) : xml('application', appObject(app))
}

export function encodeInstance (lease: Lease, format: Format): string {
  return format === 'json' ? JSON.stringify({ instance: instanceObject(lease) }) : xml('instance', instanceObject(lease))
}

// --- XML (XStream layout: "$" becomes text, "@x" becomes attribute x, arrays repeat the element) ---

const escape = (s: string): string => s.replace(/[<>&"']/g, (c) => `&${({ '<': 'lt', '>': 'gt', '&': 'amp', '"': 'quot', "'": 'apos' } as Record<string, string>)[c]};`)

function xml (name: string, value: unknown): string {
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>${element(name, value)}`
}

function element (name: string, value: unknown): string {
  if (Array.isArray(value)) return value.map((v) => element(name, v)).join('')
  if (typeof value !== 'object' || value === null) return `<${name}>${escape(String(value ?? ''))}</${name}>`
  let attrs = ''
  let text = ''
  let children = ''
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (k === '$') text = escape(String(v))
    else if (k.startsWith('@')) attrs += ` ${k.slice(1)}="${escape(String(v))}"`
    else children += element(k, v)
  }
  const body = text + children
  return body === '' ? `<${name}${attrs}/>` : `<${name}${attrs}>${body}</${name}>`
}
