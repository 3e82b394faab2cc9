// One EndpointSlice (discovery.k8s.io/v1), read defensively: what the API server or a proxy
// hands over may lack fields or carry odd ones. Each endpoint keeps only what discovery
// needs, so 10,000 endpoints cost a few MB, not the JSON they came in.

/** Which port of the slice to route to: its name (the Service port's name), its number, the only one (undefined), or any (null: the first, 0 without ports). */
export type PortChoice = string | number | undefined | null

export interface SliceEndpoint {
  /** The first address (consumers use the first; the others are the same endpoint). */
  address: string
  port: number
  /** conditions.ready; an unset `ready` means ready, as the API documents. */
  ready: boolean
  serving: boolean
  terminating: boolean
  /** targetRef of kind Pod: its name and uid. */
  pod?: string
  podUid?: string
  node?: string
  zone?: string
}

export interface ParsedSlice {
  name: string
  endpoints: SliceEndpoint[]
  /** What was wrong (each a short sentence); the endpoints concerned were skipped. */
  problems: string[]
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const str = (v: unknown): string | undefined => typeof v === 'string' && v !== '' && v.length <= 253 ? v : undefined

/** The slice's name, or undefined when the object is no EndpointSlice with a name. */
export function sliceName (object: unknown): string | undefined {
  return isObj(object) && isObj(object.metadata) ? str(object.metadata.name) : undefined
}

/** The port number endpoints of this slice listen on for `choice`, or a problem. */
function pickPort (ports: unknown, choice: PortChoice): number | string {
  const list = Array.isArray(ports) ? ports.filter(isObj) : []
  const valid = (p: unknown): p is number => typeof p === 'number' && Number.isInteger(p) && p >= 1 && p <= 65_535
  if (choice === null) return list.length > 0 && valid(list[0]!.port) ? list[0]!.port : 0
  if (typeof choice === 'string') {
    const found = list.find((p) => p.name === choice)
    if (found === undefined) return `no port named '${choice}' (ports: ${list.map((p) => `'${String(p.name ?? '')}'`).join(', ') || 'none'})`
    return valid(found.port) ? found.port : `port '${choice}' has no valid number (${JSON.stringify(found.port)})`
  }
  if (typeof choice === 'number') {
    // A headless Service without ports publishes slices without ports: the option's number is the port.
    if (list.length === 0 || list.some((p) => p.port === choice)) return choice
    return `no port ${choice} (ports: ${list.map((p) => String(p.port)).join(', ')}); name the Service port or give its target port`
  }
  if (list.length === 1) return valid(list[0]!.port) ? list[0]!.port : `port '${String(list[0]!.name ?? '')}' has no valid number (${JSON.stringify(list[0]!.port)})`
  if (list.length === 0) return 'no ports (a headless Service without ports?): set the port option to the container port'
  return `${list.length} ports (${list.map((p) => `'${String(p.name ?? p.port)}'`).join(', ')}): set the port option to one of their names`
}

/** Reads one slice. Never throws: what cannot be read is skipped and named in `problems`. */
export function parseSlice (object: unknown, choice: PortChoice, maxEndpoints: number): ParsedSlice | undefined {
  const name = sliceName(object)
  if (name === undefined) return undefined
  const slice = object as Obj
  const problems: string[] = []
  const port = pickPort(slice.ports, choice)
  if (typeof port === 'string') return { name, endpoints: [], problems: [`EndpointSlice '${name}': ${port}`] }
  if (!Array.isArray(slice.endpoints)) {
    if (slice.endpoints !== undefined && slice.endpoints !== null) problems.push(`EndpointSlice '${name}': endpoints is not a list`)
    return { name, endpoints: [], problems }
  }
  const endpoints: SliceEndpoint[] = []
  let skipped = 0
  let odd = 0
  for (const raw of slice.endpoints as unknown[]) {
    if (endpoints.length >= maxEndpoints) {
      problems.push(`EndpointSlice '${name}': ${(slice.endpoints as unknown[]).length} endpoints; only the first ${maxEndpoints} are used (maxEndpoints bounds the Service's slices together)`)
      break
    }
    const address = isObj(raw) && Array.isArray(raw.addresses) ? str(raw.addresses[0]) : undefined
    if (address === undefined) { skipped++; continue }
    const e = raw as Obj
    const c = isObj(e.conditions) ? e.conditions : {}
    const flag = (v: unknown, unset: boolean): boolean => {
      if (v === undefined || v === null) return unset
      if (typeof v === 'boolean') return v
      odd++
      return false
    }
    const ready = flag(c.ready, true)
    const ref = isObj(e.targetRef) && e.targetRef.kind === 'Pod' ? e.targetRef : undefined
    endpoints.push({
      address,
      port,
      ready,
      serving: flag(c.serving, ready),
      // An odd `terminating` counts as terminating: leaving the pick is the safe side.
      terminating: c.terminating === undefined || c.terminating === null ? false : c.terminating !== false,
      pod: str(ref?.name),
      podUid: str(ref?.uid),
      node: str(e.nodeName),
      zone: str(e.zone)
    })
  }
  if (skipped > 0) problems.push(`EndpointSlice '${name}': ${skipped} endpoint(s) without an address skipped`)
  if (odd > 0) problems.push(`EndpointSlice '${name}': ${odd} condition(s) that are not true or false, read as not ready`)
  return { name, endpoints, problems }
}
