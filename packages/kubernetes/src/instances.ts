// From slices to the instances a consumer may route to: ready and not terminating, one per
// address and port (an endpoint may sit in two slices while the controller moves it), with
// the time each was first seen ready so the balancer ramps a newcomer.
import { METADATA_KEYS } from '@lameduck/core'
import type { Instance } from '@lameduck/core'
import type { ParsedSlice, SliceEndpoint } from './endpoint-slices.ts'

export interface InstanceSettings {
  now: number
  /** The first list: what is ready in it was ready before we looked, so it counts as warm. */
  initial: boolean
  warmupMs: number
  maxEndpoints: number
  namespace: string
  /** Pod name -> its lameduck.dev/registered-at, for endpoints of the first list. */
  registeredAt?: ReadonlyMap<string, number>
}

/** Metadata keys this discovery adds beside lameduck's warmup keys. */
export const K8S_METADATA = {
  pod: 'kubernetes.pod',
  node: 'kubernetes.node',
  zone: 'kubernetes.zone',
  namespace: 'kubernetes.namespace'
} as const

const routable = (e: SliceEndpoint): boolean => e.ready && !e.terminating

export function toInstances (service: string, slices: Iterable<ParsedSlice>, readySince: ReadonlyMap<string, number | undefined>, s: InstanceSettings): { instances: Instance[], endpoints: number, readySince: Map<string, number | undefined> } {
  const byAddress = new Map<string, SliceEndpoint>()
  let endpoints = 0
  for (const slice of slices) {
    for (const e of slice.endpoints) {
      endpoints++
      const key = `${e.address} ${e.port}`
      const seen = byAddress.get(key)
      // A copy that says "not routable" loses to one that says routable only while neither is terminating.
      if (seen === undefined || (!routable(seen) && routable(e) && !seen.terminating)) byAddress.set(key, e)
      else if (e.terminating && !seen.terminating) byAddress.set(key, e)
    }
  }
  const next = new Map<string, number | undefined>()
  const instances: Instance[] = []
  for (const e of byAddress.values()) {
    if (!routable(e) || instances.length >= s.maxEndpoints) continue
    const key = `${e.podUid ?? ''} ${e.address} ${e.port}`
    const since = readySince.has(key) ? readySince.get(key) : s.initial ? (e.pod === undefined ? undefined : s.registeredAt?.get(e.pod)) : s.now
    next.set(key, since)
    const metadata: Record<string, string> = { [K8S_METADATA.namespace]: s.namespace }
    if (e.pod !== undefined) metadata[K8S_METADATA.pod] = e.pod
    if (e.node !== undefined) metadata[K8S_METADATA.node] = e.node
    if (e.zone !== undefined) metadata[K8S_METADATA.zone] = e.zone
    if (since !== undefined) metadata[METADATA_KEYS.registeredAt] = String(since)
    if (s.warmupMs > 0) metadata[METADATA_KEYS.warmup] = String(s.warmupMs)
    instances.push({ id: `${e.pod ?? e.address}:${e.port}`, service, host: e.address, port: e.port, status: 'UP', metadata })
  }
  instances.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  return { instances, endpoints, readySince: next }
}
