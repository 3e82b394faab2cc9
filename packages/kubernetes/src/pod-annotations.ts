// The pods' own word on when they registered: the annotation lameduck.dev/registered-at (ms
// since the epoch, or an RFC 3339 time), read once for the endpoints of the first list, so a
// consumer that starts while a provider is still warming ramps it from there instead of
// counting it warm. One LIST of the Service's pods, metadata only.
import type { ApiClient } from './api-client.ts'

export const REGISTERED_AT_ANNOTATION = 'lameduck.dev/registered-at'

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The annotation as ms since the epoch, or undefined when absent or unreadable. */
export function readRegisteredAt (value: unknown): number | undefined {
  if (typeof value !== 'string' || value.length > 64) return undefined
  const v = value.trim()
  // Date.parse alone takes '-5' or 'May 1' as dates: only the RFC 3339 shape is read as one.
  const n = /^\d{1,16}$/.test(v) ? Number(v) : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(v) ? Date.parse(v) : Number.NaN
  return Number.isFinite(n) && n > 0 ? n : undefined
}

/** Pod name -> registered-at, for the pods the Service selects. Throws what the API answered. */
export async function podRegisteredAt (api: ApiClient, namespace: string, service: string, signal: AbortSignal): Promise<{ times: Map<string, number>, bad: number }> {
  const ns = encodeURIComponent(namespace)
  const svc = await api.getJson(`/api/v1/namespaces/${ns}/services/${encodeURIComponent(service)}`, `get service '${service}' (podAnnotations)`, signal)
  const selector = isObj(svc) && isObj(svc.spec) && isObj(svc.spec.selector) ? svc.spec.selector : undefined
  const times = new Map<string, number>()
  let bad = 0
  if (selector === undefined) return { times, bad }
  const labelSelector = Object.entries(selector).map(([k, v]) => `${k}=${String(v)}`).join(',')
  let cont: string | undefined
  do {
    const page = await api.getJson(
      `/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(labelSelector)}&limit=500${cont === undefined ? '' : `&continue=${encodeURIComponent(cont)}`}`,
      `list pods of '${service}' (podAnnotations)`, signal,
      // Metadata only: a pod's spec and status can be large and are not needed.
      'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json'
    )
    const items = isObj(page) && Array.isArray(page.items) ? page.items as unknown[] : []
    for (const item of items) {
      const meta = isObj(item) && isObj(item.metadata) ? item.metadata : undefined
      const raw = meta !== undefined && isObj(meta.annotations) ? meta.annotations[REGISTERED_AT_ANNOTATION] : undefined
      if (raw === undefined || typeof meta?.name !== 'string') continue
      const at = readRegisteredAt(raw)
      if (at === undefined) bad++
      else times.set(meta.name, at)
    }
    cont = isObj(page) && isObj(page.metadata) && typeof page.metadata.continue === 'string' && page.metadata.continue !== '' ? page.metadata.continue : undefined
  } while (cont !== undefined)
  return { times, bad }
}
