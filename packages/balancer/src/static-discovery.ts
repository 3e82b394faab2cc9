import { InvalidOptionError, METADATA_KEYS, serviceKey, show } from '@lameduck/core'
import type { Discovery, Instance, InstanceStatus } from '@lameduck/core'
import { bareHost, hostPort, hostProblem } from './address.ts'
import { WEIGHT_RANGE } from './instance-metadata.ts'

/** An instance in a static list: address plus optional weight and metadata. */
export interface StaticInstance {
  service: string
  host: string
  port: number
  /** Default `host:port` (`[v6]:port`). */
  id?: string
  /** Shorthand for metadata `lameduck.weight`. */
  weight?: number
  status?: InstanceStatus
  metadata?: Record<string, string>
}

/** `'127.0.0.1:3001'`, `'http://10.0.0.5:8080'`, or an object without `service`. */
export type StaticAddress = string | Omit<StaticInstance, 'service'>

export type StaticInput = readonly StaticInstance[] | Readonly<Record<string, readonly StaticAddress[]>>

export interface StaticDiscovery extends Discovery {
  /** Replaces a service's list and notifies subscribers (e.g. from your own DNS or config source). */
  set(service: string, list: readonly StaticAddress[]): void
}

function toInstance (service: string, address: StaticAddress): Instance {
  let spec: Omit<StaticInstance, 'service'>
  if (typeof address === 'string') {
    let url: URL
    try { url = new URL(address.includes('://') ? address : `http://${address}`) } catch { url = new URL('http://invalid') }
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80))
    if (url.hostname === 'invalid' || url.hostname === '') throw new InvalidOptionError('staticDiscovery', `'${address}' is not an address; use 'host:port' or 'http://host:port'`)
    spec = { host: url.hostname.replace(/^\[|\]$/g, ''), port }
  } else {
    spec = address
  }
  if (typeof spec !== 'object' || spec === null || typeof spec.host !== 'string' || spec.host === '') {
    throw new InvalidOptionError('staticDiscovery', `an instance of '${service}' has no host; give { host, port } or 'host:port'`)
  }
  const problem = hostProblem(spec.host)
  if (problem !== null) throw new InvalidOptionError('staticDiscovery', `instance '${spec.host}' of '${service}': ${problem}; give an IP address or a DNS name as host, and the port separately`)
  if (!Number.isInteger(spec.port) || spec.port < 1 || spec.port > 65535) {
    throw new InvalidOptionError('staticDiscovery', `instance ${spec.host} of '${service}' has port ${String(spec.port)}; use 1..65535`)
  }
  const w = spec.weight
  if (w !== undefined && (typeof w !== 'number' || !(w === 0 || (w >= WEIGHT_RANGE.min && w <= WEIGHT_RANGE.max)))) {
    // Configuration, so refused here rather than clamped (as a registry's value is).
    throw new InvalidOptionError('staticDiscovery', `instance ${spec.host} of '${service}' has weight ${show(w)}; use 0 (never picked) or ${WEIGHT_RANGE.min}..${WEIGHT_RANGE.max}`)
  }
  const metadata = { ...spec.metadata }
  if (spec.weight !== undefined) metadata[METADATA_KEYS.weight] = String(spec.weight)
  return { id: spec.id ?? hostPort(bareHost(spec.host), spec.port), service, host: bareHost(spec.host), port: spec.port, status: spec.status ?? 'UP', metadata }
}

/** A fixed (or hand-updated) list of instances as a Discovery: for tests, demos, or addresses from config. */
export function staticDiscovery (input: StaticInput = []): StaticDiscovery {
  const lists = new Map<string, Instance[]>()
  const listeners = new Map<string, Set<(list: Instance[]) => void>>()
  const copy = (list: Instance[] | undefined): Instance[] => (list ?? []).filter((i) => i.status === 'UP').map((i) => ({ ...i, metadata: { ...i.metadata } }))

  if (Array.isArray(input)) {
    for (const item of input as readonly StaticInstance[]) {
      if (typeof item?.service !== 'string' || item.service === '') throw new InvalidOptionError('staticDiscovery', 'each instance needs a service name')
      const key = serviceKey(item.service)
      const list = lists.get(key) ?? []
      list.push(toInstance(item.service, item))
      lists.set(key, list)
    }
  } else if (typeof input === 'object' && input !== null) {
    for (const [service, addresses] of Object.entries(input as Record<string, readonly StaticAddress[]>)) {
      if (!Array.isArray(addresses)) throw new InvalidOptionError('staticDiscovery', `'${service}' must map to an array of addresses`)
      lists.set(serviceKey(service), addresses.map((a) => toInstance(service, a)))
    }
  } else {
    throw new InvalidOptionError('staticDiscovery', "expected [{ service, host, port }] or { orders: ['127.0.0.1:3001'] }")
  }

  return {
    instances (service) {
      return copy(lists.get(serviceKey(service)))
    },
    subscribe (service, onChange) {
      const key = serviceKey(service)
      let set = listeners.get(key)
      if (set === undefined) { set = new Set(); listeners.set(key, set) }
      set.add(onChange)
      return () => { set.delete(onChange) }
    },
    set (service, list) {
      if (!Array.isArray(list)) throw new InvalidOptionError('staticDiscovery.set', 'expects an array of addresses')
      const key = serviceKey(service)
      lists.set(key, list.map((a) => toInstance(service, a)))
      for (const fn of listeners.get(key) ?? []) fn(copy(lists.get(key)))
    }
  }
}
