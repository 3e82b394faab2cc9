import {
  AUTO_FIELDS, DEFAULT_PORT, DEFAULT_SECURE_PORT, toStatus,
  type AutoField, type InstanceInfo
} from './instance-info.ts'

export type ParseResult = { ok: true, info: InstanceInfo } | { ok: false, status: number, message: string }

const DATA_CENTER_NAMES = ['Netflix', 'Amazon', 'MyOwn']

type Json = Record<string, unknown>
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
const isBlank = (v: string | undefined): boolean => v === undefined || v.trim() === ''

/** Jackson's asText(): scalars as text, containers as ''. */
function asText (v: unknown): string {
  if (typeof v === 'string') return v
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  return ''
}

function asBoolean (v: unknown): boolean {
  return v === true || (typeof v === 'string' && v.trim().toLowerCase() === 'true')
}

class BadBody extends Error {}

/**
 * The port object `{"$": 8080, "@enabled": "true"}`. The real codec reads `$`
 * and `@enabled` from an object and fails on anything else; lenient mode also
 * takes a plain number or numeric string (a common client mistake).
 */
function parsePort (v: unknown, field: string, strict: boolean, fallback: { port: number, enabled: boolean }): { port: number, enabled: boolean } {
  if (isObject(v)) {
    const port = Number.parseInt(asText(v.$), 10)
    if (strict && (!Number.isInteger(port) || v['@enabled'] === undefined)) {
      throw new BadBody(`Cannot deserialize ${field}: expected {"$": <port>, "@enabled": "true"|"false"}`)
    }
    return { port: Number.isInteger(port) ? port : fallback.port, enabled: v['@enabled'] === undefined ? fallback.enabled : asBoolean(v['@enabled']) }
  }
  if (strict) throw new BadBody(`Cannot deserialize ${field}: expected an object like {"$": 8080, "@enabled": "true"}, got ${JSON.stringify(v)}`)
  const port = Number.parseInt(asText(v), 10)
  if (!Number.isInteger(port)) throw new BadBody(`Cannot deserialize ${field}: ${JSON.stringify(v)}`)
  return { port, enabled: fallback.enabled }
}

/** Parses `{"instance": {...}}` and applies ApplicationResource.addInstance's checks. */
export function parseRegistration (body: unknown, pathApp: string, strict: boolean, now: number): ParseResult {
  const appName = pathApp.toUpperCase()
  const raw = isObject(body) ? body.instance : undefined
  if (!isObject(raw)) return { ok: false, status: 400, message: 'Cannot deserialize instance: expected {"instance": {...}}' }
  let info: InstanceInfo
  try {
    info = build(raw, strict, now)
  } catch (err) {
    if (err instanceof BadBody) return { ok: false, status: 400, message: err.message }
    throw err
  }
  // The same checks, in the same order, as ApplicationResource.addInstance.
  const fail = (message: string): ParseResult => ({ ok: false, status: 400, message })
  if (isBlank(info.id)) return fail('Missing instanceId')
  if (isBlank(info.hostName)) return fail('Missing hostname')
  if (isBlank(info.ipAddr)) return fail('Missing ip address')
  if (isBlank(info.app)) return fail('Missing appName')
  if (info.app !== appName) return fail(`Mismatched appName, expecting ${appName} but was ${info.app}`)
  if (!isObject(raw.dataCenterInfo)) return fail('Missing dataCenterInfo')
  if (isBlank(info.dataCenterInfo.name)) return fail('Missing dataCenterInfo Name')
  return { ok: true, info }
}

function build (raw: Json, strict: boolean, now: number): InstanceInfo {
  const text = (key: string): string | undefined => raw[key] === undefined || raw[key] === null ? undefined : asText(raw[key])

  let port = { port: DEFAULT_PORT, enabled: true }
  if (raw.port !== undefined && raw.port !== null) port = parsePort(raw.port, 'port', strict, port)
  let securePort = { port: DEFAULT_SECURE_PORT, enabled: false }
  if (raw.securePort !== undefined && raw.securePort !== null) securePort = parsePort(raw.securePort, 'securePort', strict, securePort)

  const { dataCenterName, dataCenterMetadata } = dataCenter(raw.dataCenterInfo, strict)
  const leaseInfo = lease(raw.leaseInfo)
  const auto: Partial<Record<AutoField, string>> = {}
  for (const field of AUTO_FIELDS) {
    const v = text(field)
    if (v !== undefined) auto[field] = v
  }

  const instanceId = text('instanceId')
  const hostName = text('hostName') ?? ''
  const amazonId = dataCenterName === 'Amazon' ? dataCenterMetadata?.['instance-id'] : undefined
  const id = !isBlank(instanceId) ? instanceId! : !isBlank(amazonId) ? amazonId! : hostName
  const dirty = Number.parseInt(text('lastDirtyTimestamp') ?? '', 10)
  const countryId = Number.parseInt(text('countryId') ?? '', 10)
  const sid = text('sid')

  return {
    id,
    instanceId,
    hostName,
    app: (text('app') ?? '').toUpperCase(),
    ipAddr: text('ipAddr') ?? '',
    sid: sid === 'na' || sid === 'unknown' ? undefined : sid,
    status: raw.status === undefined ? 'UP' : toStatus(raw.status),
    overriddenStatus: toStatus(raw.overriddenStatus ?? raw.overriddenstatus),
    port: port.port,
    portEnabled: port.enabled,
    securePort: securePort.port,
    securePortEnabled: securePort.enabled,
    countryId: Number.isFinite(countryId) ? countryId : 1,
    dataCenterInfo: dataCenterMetadata ? { name: dataCenterName, metadata: dataCenterMetadata } : { name: dataCenterName },
    leaseInfo,
    metadata: isObject(raw.metadata) ? stringMap(raw.metadata) : {},
    auto,
    isCoordinatingDiscoveryServer: false,
    lastUpdatedTimestamp: now,
    lastDirtyTimestamp: Number.isFinite(dirty) ? dirty : now,
    actionType: undefined
  }
}

function dataCenter (dc: unknown, strict: boolean): { dataCenterName: string, dataCenterMetadata: Record<string, string> | undefined } {
  let dataCenterName = ''
  let dataCenterMetadata: Record<string, string> | undefined
  if (isObject(dc)) {
    if (strict && typeof dc['@class'] !== 'string') throw new BadBody('Cannot deserialize dataCenterInfo: missing type id property \'@class\'')
    dataCenterName = asText(dc.name)
    if (strict && dataCenterName !== '' && !DATA_CENTER_NAMES.includes(dataCenterName)) {
      throw new BadBody(`Cannot deserialize dataCenterInfo: unknown name '${dataCenterName}'; use one of ${DATA_CENTER_NAMES.join(', ')}`)
    }
    if (isObject(dc.metadata)) dataCenterMetadata = stringMap(dc.metadata)
  } else if (dc !== undefined && dc !== null && strict) {
    throw new BadBody('Cannot deserialize dataCenterInfo: expected an object')
  }
  return { dataCenterName, dataCenterMetadata }
}

function lease (raw: unknown): InstanceInfo['leaseInfo'] {
  if (!isObject(raw)) return undefined
  const renewal = Number.parseInt(asText(raw.renewalIntervalInSecs), 10)
  const duration = Number.parseInt(asText(raw.durationInSecs), 10)
  return { renewalIntervalInSecs: Number.isFinite(renewal) ? renewal : 30, durationInSecs: Number.isFinite(duration) ? duration : 90 }
}

/** Metadata as the codec reads it: every value as text, the '@class' placeholder dropped. */
function stringMap (v: Json): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, value] of Object.entries(v)) {
    if (k === '@class') continue
    if (value !== null && value !== undefined) out[k] = asText(value)
  }
  return out
}
