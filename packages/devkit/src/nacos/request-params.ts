import type { IncomingMessage } from 'node:http'
import { isIPv4 } from 'node:net'
import { DEFAULT_GROUP, DEFAULT_NAMESPACE, GROUP_SPLITTER } from './naming-store.ts'

// Parameter handling of the v1 naming API. v1 clients (the Node SDK included)
// send every parameter in the query string, even for POST/PUT/DELETE; others
// send a form body. Like a servlet, the query string wins.

/** A 4xx answer; the message is sent as Nacos does: `caused: <message>;`. */
export class NacosHttpError extends Error {
  readonly status: number
  constructor (status: number, message: string) {
    super(message)
    this.status = status
  }
}

export class RequestParams {
  readonly #query: URLSearchParams
  readonly #body: URLSearchParams

  constructor (query: URLSearchParams, body: URLSearchParams = new URLSearchParams()) {
    this.#query = query
    this.#body = body
  }

  get (name: string): string | undefined {
    return this.#query.get(name) ?? this.#body.get(name) ?? undefined
  }

  required (name: string): string {
    const value = this.get(name)
    if (value === undefined || value === '') throw new NacosHttpError(400, `Param '${name}' is required.`)
    return value
  }

  int (name: string, fallback?: number): number {
    const raw = this.get(name)
    if (raw === undefined || raw === '') {
      if (fallback !== undefined) return fallback
      throw new NacosHttpError(400, `Param '${name}' is required.`)
    }
    const n = Number(raw)
    if (!Number.isInteger(n)) throw new NacosHttpError(400, `Param '${name}' must be an integer, got '${raw}'.`)
    return n
  }

  bool (name: string, fallback: boolean): boolean {
    const raw = this.get(name)
    return raw === undefined || raw === '' ? fallback : raw.toLowerCase() === 'true'
  }

  namespaceId (): string {
    return this.get('namespaceId') || DEFAULT_NAMESPACE
  }

  /** `serviceName` may carry its group (`GROUP@@name`); otherwise `groupName` (default DEFAULT_GROUP) applies. */
  service (): { name: string, groupName: string } {
    const serviceName = this.required('serviceName')
    if (serviceName.includes(GROUP_SPLITTER)) {
      const parts = serviceName.split(GROUP_SPLITTER)
      if (parts.length !== 2 || parts[0] === '' || parts[1] === '') {
        throw new NacosHttpError(400, `Param 'serviceName' is illegal, it should be 'groupName@@serviceName', got '${serviceName}'.`)
      }
      return { name: serviceName, groupName: parts[0]! }
    }
    const groupName = this.get('groupName') || DEFAULT_GROUP
    return { name: `${groupName}${GROUP_SPLITTER}${serviceName}`, groupName }
  }

  toObject (): Record<string, string> {
    return { ...Object.fromEntries(this.#body), ...Object.fromEntries(this.#query) }
  }
}

const CLUSTER_NAME = /^[0-9a-zA-Z-]+$/

export function checkClusterName (clusterName: string): string {
  if (!CLUSTER_NAME.test(clusterName)) throw new NacosHttpError(400, `Instance 'clusterName' should be characters with only 0-9a-zA-Z-, got '${clusterName}'.`)
  return clusterName
}

/** Instance metadata: JSON, or the older `k1=v1,k2=v2` form. Values become strings. */
export function parseMetadata (raw: string | undefined): Record<string, string> {
  if (raw === undefined || raw.trim() === '') return {}
  const out: Record<string, string> = {}
  if (raw.trim().startsWith('{')) {
    let parsed: unknown
    try { parsed = JSON.parse(raw) } catch { throw new NacosHttpError(400, `Param 'metadata' is not valid JSON: ${raw}`) }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new NacosHttpError(400, 'Param \'metadata\' must be a JSON object.')
    for (const [k, v] of Object.entries(parsed)) out[k] = typeof v === 'string' ? v : JSON.stringify(v)
    return out
  }
  for (const pair of raw.split(',')) {
    const at = pair.indexOf('=')
    if (at <= 0) throw new NacosHttpError(400, `Param 'metadata' must be JSON or k1=v1,k2=v2, got '${raw}'.`)
    out[pair.slice(0, at)] = pair.slice(at + 1)
  }
  return out
}

export function parseWeight (raw: string | undefined): number {
  if (raw === undefined || raw === '') return 1
  const weight = Number(raw)
  if (!Number.isFinite(weight) || weight < 0 || weight > 10_000) {
    throw new NacosHttpError(400, 'instance format invalid: The weights range from 0.0 to 10000.0')
  }
  return weight
}

// SwitchDomain defaults: the lowest client version a server pushes to, per client type.
const PUSH_MIN_VERSION: Record<string, string> = { Java: '0.1.0', Go: '0.1.0', C: '1.0.12', CSharp: '0.9.0', DNS: '0.4.3' }

/** Whether a client agent gets UDP pushes (PushService.canEnablePush): e.g. `Nacos-Java-Client:v1.0.0`. */
export function canPush (agent: string): boolean {
  const m = /^Nacos-(Java|Go|C|CSharp)-Client:v(\d+(?:\.\d+)*)/.exec(agent) ?? /^Nacos-(DNS):v(\d+(?:\.\d+)*)/.exec(agent)
  if (m === null) return false
  return compareVersions(m[2]!, PUSH_MIN_VERSION[m[1]!]!) >= 0
}

function compareVersions (a: string, b: string): number {
  const pa = a.split('.').map(Number)
  const pb = b.split('.').map(Number)
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}

/** The client agent: `Client-Version`, else `User-Agent` (what Nacos reads to decide on push). */
export function agentOf (req: IncomingMessage): string {
  const pick = (h: string | string[] | undefined): string => (Array.isArray(h) ? h[0] : h) ?? ''
  return pick(req.headers['client-version']) || pick(req.headers['user-agent'])
}

export function peerAddress (req: IncomingMessage): string {
  const addr = req.socket.remoteAddress ?? '127.0.0.1'
  return addr.startsWith('::ffff:') ? addr.slice(7) : addr
}

export function pushAddress (clientIP: string | undefined, peer: string, pushTo: 'client-ip' | 'peer'): string {
  return pushTo === 'client-ip' && clientIP !== undefined && isIPv4(clientIP) ? clientIP : peer
}

export async function readForm (req: IncomingMessage, limit = 1 << 20): Promise<URLSearchParams> {
  if (req.method === 'GET' || req.method === 'HEAD') { req.resume(); return new URLSearchParams() }
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > limit) throw new NacosHttpError(413, 'request body too large')
    chunks.push(chunk as Buffer)
  }
  const type = req.headers['content-type'] ?? ''
  if (chunks.length === 0 || !type.includes('application/x-www-form-urlencoded')) return new URLSearchParams()
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'))
}
