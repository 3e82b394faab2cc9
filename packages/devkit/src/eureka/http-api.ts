// The REST v2 resources of the local Eureka server, as a routes table: the path shape
// picks the resource, the method its handler; a known resource without a handler for
// the method is a 405, an unknown path a 404 (as Jersey answers on a real server).
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Clock, Logger } from '@lameduck/core'
import { encodeInstance, type Format } from './codec.ts'
import { parseStatusStrict } from './instance-info.ts'
import type { InstanceRegistry } from './instance-registry.ts'
import { REPLICATION_HEADER, type PeerReplicator, type ReplicationTask } from './peer-replication.ts'
import { parseRegistration } from './registration-body.ts'
import type { CacheValue, ResponseCache } from './response-cache.ts'

export interface EurekaHttpContext {
  registry: InstanceRegistry
  cache: ResponseCache
  replicator: PeerReplicator
  strict: boolean
  disableDelta: boolean
  clock: Clock
  logger: Logger
}

interface Call {
  req: IncomingMessage
  res: ServerResponse
  params: string[]
  q: URLSearchParams
  format: Format
  gzip: boolean
  /** Queues a change for the peers, unless this request is itself a peer's replication. */
  replicate(task: ReplicationTask): void
}

type Handler = (call: Call) => void | Promise<void>

const MAX_BODY = 1 << 20
const JSON_TYPE = 'application/json'
const XML_TYPE = 'application/xml'

/** Path shapes: a literal segment, or `*` for a parameter. */
const SHAPES: Array<[string, string[]]> = [
  ['apps', ['apps']],
  ['delta', ['apps', 'delta']],
  ['app', ['apps', '*']],
  ['instance', ['apps', '*', '*']],
  ['status', ['apps', '*', '*', 'status']],
  ['metadata', ['apps', '*', '*', 'metadata']],
  ['instanceById', ['instances', '*']],
  ['vip', ['vips', '*']],
  ['svip', ['svips', '*']]
]

function match (segments: string[]): { route: string, params: string[] } | undefined {
  for (const [route, shape] of SHAPES) {
    if (shape.length !== segments.length) continue
    const params: string[] = []
    if (shape.every((part, i) => part === '*' ? params.push(segments[i]!) > 0 : part === segments[i])) return { route, params }
  }
  return undefined
}

export function createEurekaHandler (ctx: EurekaHttpContext): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const routes = eurekaRoutes(ctx)
  return async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://eureka.local')
    let segments: string[]
    try {
      segments = url.pathname.split('/').filter((s) => s !== '').map((s) => decodeURIComponent(s))
    } catch {
      return send(res, 400, 'text/plain', 'Malformed URL')
    }
    if (segments[0] !== 'eureka') return send(res, 404)
    // Spring Cloud rewrites /eureka/x to /eureka/v2/x; a WAR deployment serves /eureka/v2 directly.
    const found = match(segments[1] === 'v2' ? segments.slice(2) : segments.slice(1))
    if (found === undefined) return send(res, 404)
    const handler = routes[found.route]![req.method ?? 'GET']
    if (handler === undefined) return send(res, 405)
    const replicated = req.headers[REPLICATION_HEADER] === 'true'
    return handler({
      req,
      res,
      params: found.params,
      q: url.searchParams,
      format: (req.headers.accept ?? '').includes('json') ? 'json' : 'xml',
      gzip: (req.headers['accept-encoding'] ?? '').includes('gzip'),
      replicate: replicated ? () => {} : (task) => ctx.replicator.enqueue(task)
    })
  }
}

function eurekaRoutes (ctx: EurekaHttpContext): Record<string, Record<string, Handler>> {
  const { registry, cache } = ctx
  const cached = (key: (c: Call) => string): Handler => (c) => sendCached(c.res, cache.get(`${c.format}:${key(c)}`), c.format, c.gzip)
  const instanceBody = (app: string, id: string) => (): string | undefined => {
    const lease = registry.instance(app, id)
    return lease === undefined ? undefined : encodeInstance(lease, 'json')
  }
  const appOf = (c: Call): string => c.params[0]!.toUpperCase()
  return {
    apps: { GET: cached(() => 'ALL_APPS') },
    delta: { GET: (c) => ctx.disableDelta ? send(c.res, 403) : cached(() => 'ALL_APPS_DELTA')(c) },
    app: {
      GET: cached((c) => `APP:${appOf(c)}`),
      POST: (c) => register(ctx, c, appOf(c), instanceBody)
    },
    instance: {
      GET: (c) => sendInstance(c, registry.instance(appOf(c), c.params[1]!)),
      PUT: (c) => renew(ctx, c, appOf(c), c.params[1]!, instanceBody),
      DELETE: (c) => {
        const [app, id] = [appOf(c), c.params[1]!]
        if (!registry.cancel(app, id)) return send(c.res, 404)
        c.replicate({ action: 'Cancel', app, id })
        return send(c.res, 200)
      }
    },
    status: {
      PUT: (c) => statusChange(ctx, c, 'StatusUpdate'),
      DELETE: (c) => statusChange(ctx, c, 'DeleteStatusOverride')
    },
    metadata: { PUT: (c) => send(c.res, registry.updateMetadata(appOf(c), c.params[1]!, c.q.entries()) ? 200 : 404) },
    instanceById: { GET: (c) => sendInstance(c, registry.instanceById(c.params[0]!)) },
    vip: { GET: cached((c) => `VIP:${c.params[0]}`) },
    svip: { GET: cached((c) => `SVIP:${c.params[0]}`) }
  }
}

async function register (ctx: EurekaHttpContext, c: Call, app: string, instanceBody: (app: string, id: string) => () => string | undefined): Promise<void> {
  const type = c.req.headers['content-type'] ?? ''
  if (type.includes('xml')) return send(c.res, 415, 'text/plain', 'This local Eureka server accepts JSON registrations only')
  let body: unknown
  try {
    body = JSON.parse(await readBody(c.req))
  } catch (err) {
    return send(c.res, 400, 'text/plain', `Cannot parse registration body: ${(err as Error).message}`)
  }
  const parsed = parseRegistration(body, app, ctx.strict, ctx.clock.now())
  if (!parsed.ok) return send(c.res, parsed.status, 'text/plain', parsed.message)
  ctx.registry.register(parsed.info)
  c.replicate({ action: 'Register', app, id: parsed.info.id, instance: instanceBody(app, parsed.info.id) })
  ctx.logger.info({ app, id: parsed.info.id, status: parsed.info.status }, `eureka: registered ${app}/${parsed.info.id} (${parsed.info.status})`)
  return send(c.res, 204)
}

function renew (ctx: EurekaHttpContext, c: Call, app: string, id: string, instanceBody: (app: string, id: string) => () => string | undefined): void {
  const { registry } = ctx
  if (!registry.renew(app, id)) return send(c.res, 404)
  // A client whose copy is newer than ours must re-register (InstanceResource.validateDirtyTimestamp).
  const theirs = optionalNumber(c.q.get('lastDirtyTimestamp'))
  const ours = registry.lastDirtyTimestamp(app, id)
  if (theirs !== undefined && ours !== undefined && theirs > ours) return send(c.res, 404)
  const status = registry.instance(app, id)?.holder.status ?? 'UP'
  const query = new URLSearchParams({ status, lastDirtyTimestamp: String(ours ?? ctx.clock.now()) })
  c.replicate({ action: 'Heartbeat', app, id, query: query.toString(), instance: instanceBody(app, id) })
  return send(c.res, 200)
}

/** PUT .../status?value=X sets the override; DELETE .../status[?value=X] removes it. */
function statusChange (ctx: EurekaHttpContext, c: Call, action: 'StatusUpdate' | 'DeleteStatusOverride'): void {
  const [app, id] = [c.params[0]!.toUpperCase(), c.params[1]!]
  if (ctx.registry.instance(app, id) === undefined) return send(c.res, 404)
  const dirty = optionalNumber(c.q.get('lastDirtyTimestamp'))
  const value = c.q.get('value')
  // InstanceStatus.valueOf(value): a missing or unknown value is a 500 on a real server.
  const status = action === 'DeleteStatusOverride' && value === null ? 'UNKNOWN' : parseStatusStrict(value)
  if (status === undefined) return send(c.res, 500, 'text/plain', `No enum constant InstanceStatus.${value}`)
  const done = action === 'StatusUpdate'
    ? ctx.registry.statusUpdate(app, id, status, dirty)
    : ctx.registry.deleteStatusOverride(app, id, status, dirty)
  if (!done) return send(c.res, 500)
  c.replicate({ action, app, id, query: c.q.toString() })
  return send(c.res, 200)
}

function sendInstance (c: Call, lease: ReturnType<InstanceRegistry['instance']>): void {
  if (lease === undefined) return send(c.res, 404)
  return send(c.res, 200, c.format === 'json' ? JSON_TYPE : XML_TYPE, encodeInstance(lease, c.format))
}

function optionalNumber (v: string | null): number | undefined {
  if (v === null || v === '') return undefined
  const n = Number(v)
  return Number.isFinite(n) ? n : undefined
}

export function send (res: ServerResponse, status: number, type?: string, body?: string | Buffer, headers: Record<string, string> = {}): void {
  if (body === undefined) {
    res.writeHead(status, { 'content-length': '0', ...headers })
    res.end()
    return
  }
  res.writeHead(status, { 'content-type': type ?? 'text/plain', 'content-length': String(Buffer.byteLength(body)), ...headers })
  res.end(body)
}

/** A cached payload: 404 for Eureka's EMPTY_PAYLOAD, gzip when the client accepts it. */
function sendCached (res: ServerResponse, value: CacheValue, format: Format, gzip: boolean): void {
  if (value.body === null) return send(res, 404)
  const type = format === 'json' ? JSON_TYPE : XML_TYPE
  if (gzip) return send(res, 200, type, value.gzipped!, { 'content-encoding': 'gzip' })
  return send(res, 200, type, value.body)
}

function readBody (req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY) { reject(new Error('body too large')); req.destroy(); return }
      chunks.push(chunk)
    })
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}
