// A local Eureka server over node:http, faithful to what eureka-js-client and
// Java Eureka clients rely on: REST v2 under /eureka and /eureka/v2, the
// two-level response cache, the delta queue, leases, eviction and status overrides.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Timer } from '@lameduck/core'
import { encodeApplication, encodeApplications, encodeInstance, type Format } from './codec.ts'
import { parseStatusStrict } from './instance-info.ts'
import { InstanceRegistry } from './instance-registry.ts'
import { resolveEurekaServerOptions, type EurekaServerOptions, type ResolvedEurekaServerOptions } from './options.ts'
import { PeerReplicator, REPLICATION_HEADER, type ReplicationTask } from './peer-replication.ts'
import { parseRegistration } from './registration-body.ts'
import { ResponseCache, type CacheValue } from './response-cache.ts'

export interface EurekaRequestRecord { at: number, method: string, path: string, status: number }

export interface EurekaServer {
  /** Base URL clients are configured with, e.g. http://127.0.0.1:8761/eureka */
  url: string
  /** eureka-js-client `serviceUrls` entry: `${url}/apps/` */
  serviceUrl: string
  host: string
  port: number
  options: ResolvedEurekaServerOptions
  /** What the registry holds right now, bypassing the response caches. */
  snapshot: InstanceRegistry['snapshot']
  /** Recent requests (last 1000), oldest first: for tests that count heartbeats or DELETEs. */
  requests(): EurekaRequestRecord[]
  /** Runs the read-only cache refresh now, as the timer would. */
  refreshCache(): void
  /** Runs the eviction task now; returns the evicted APP/id pairs. */
  evict(): string[]
  /** Self-preservation bookkeeping: expected clients, renews threshold and last minute, whether expiry runs. */
  selfPreservation(): ReturnType<InstanceRegistry['selfPreservationState']>
  /** Adds a peer (its base URL, …/eureka) that changes made here are replicated to. */
  addPeer(url: string): void
  /** Replication: changes queued for the next batch, and what was sent. */
  replication(): { peers: string[], pending: number, batches: number, requests: number, failures: number }
  close(): Promise<void>
}

const MAX_BODY = 1 << 20
const JSON_TYPE = 'application/json'
const XML_TYPE = 'application/xml'

/** Starts a local Eureka server; resolves once it listens. */
export async function startEureka (options: EurekaServerOptions = {}): Promise<EurekaServer> {
  const o = resolveEurekaServerOptions(options)
  const { clock, logger } = o
  let versionDelta = 0
  const timers = new Set<Timer>()
  const log: EurekaRequestRecord[] = []

  const registry: InstanceRegistry = new InstanceRegistry({
    clock,
    leaseExpiryBug: o.leaseExpiryBug,
    defaultLeaseDurationMs: o.defaultLeaseDurationMs,
    retentionTimeInMSInDeltaQueue: o.retentionTimeInMSInDeltaQueue,
    selfPreservation: o.selfPreservation,
    renewalPercentThreshold: o.renewalPercentThreshold,
    expectedClientRenewalIntervalSeconds: o.expectedClientRenewalIntervalSeconds,
    onChange: (app, vip, svip) => cache.invalidate(keysFor(app, vip, svip))
  })

  const cache: ResponseCache = new ResponseCache({
    clock,
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

  function keysFor (app: string, vip: string | undefined, svip: string | undefined): string[] {
    const names = ['ALL_APPS', 'ALL_APPS_DELTA', `APP:${app}`]
    for (const v of [vip, ...(vip?.split(',') ?? [])]) if (v) names.push(`VIP:${v}`)
    for (const v of [svip, ...(svip?.split(',') ?? [])]) if (v) names.push(`SVIP:${v}`)
    return names.flatMap((n) => [`json:${n}`, `xml:${n}`])
  }

  function every (periodMs: number, task: () => void): void {
    const run = (): void => {
      timers.delete(timer)
      try { task() } catch (err) { logger.error({ err }, 'eureka: background task failed') }
      if (closed) return
      timer = clock.setTimeout(run, periodMs)
      timer.unref?.()
      timers.add(timer)
    }
    let timer = clock.setTimeout(run, periodMs)
    timer.unref?.()
    timers.add(timer)
  }

  let lastEviction = 0
  function evictNow (): string[] {
    const now = clock.now()
    // Late timer runs extend the expiry check, like getCompensationTimeMs().
    const compensation = lastEviction === 0 ? 0 : Math.max(0, now - lastEviction - o.evictionIntervalTimerInMs)
    lastEviction = now
    const evicted = registry.evict(compensation)
    if (evicted.length > 0) logger.info({ evicted }, `eureka: evicted ${evicted.length} expired lease(s)`)
    return evicted
  }

  let closed = false
  every(o.deltaRetentionTimerIntervalInMs, () => registry.pruneDeltas())
  every(o.evictionIntervalTimerInMs, evictNow)
  every(o.renewsMeasureIntervalMs, () => registry.rollRenewsMeasurement())
  every(o.renewalThresholdUpdateIntervalMs, () => registry.updateRenewalThreshold())

  const replicator = new PeerReplicator({ batchMs: o.replicationBatchMs, clock, logger })
  replicator.peers.push(...o.peerUrls)
  const instanceBody = (app: string, id: string) => (): string | undefined => {
    const lease = registry.instance(app, id)
    return lease === undefined ? undefined : encodeInstance(lease, 'json')
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.error({ err }, 'eureka: request failed')
      if (!res.headersSent) send(res, 500, 'text/plain', String(err))
      else res.destroy()
    })
  })
  server.keepAliveTimeout = 30_000

  async function handle (req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://eureka.local')
    const method = req.method ?? 'GET'
    res.on('finish', () => {
      log.push({ at: clock.now(), method, path: url.pathname + url.search, status: res.statusCode })
      if (log.length > 1000) log.splice(0, log.length - 1000)
      logger.debug({ method, path: url.pathname + url.search, status: res.statusCode }, `eureka: ${method} ${url.pathname}${url.search} ${res.statusCode}`)
    })
    let segments: string[]
    try {
      segments = url.pathname.split('/').filter((s) => s !== '').map((s) => decodeURIComponent(s))
    } catch {
      return send(res, 400, 'text/plain', 'Malformed URL')
    }
    if (segments[0] !== 'eureka') return send(res, 404)
    // Spring Cloud rewrites /eureka/x to /eureka/v2/x; a WAR deployment serves /eureka/v2 directly.
    const rest = segments[1] === 'v2' ? segments.slice(2) : segments.slice(1)
    const [resource, ...args] = rest
    const format: Format = (req.headers.accept ?? '').includes('json') ? 'json' : 'xml'
    const gzip = (req.headers['accept-encoding'] ?? '').includes('gzip')
    const q = url.searchParams
    // A peer's replicated request is applied here and not replicated again.
    const replicate = req.headers[REPLICATION_HEADER] === 'true' ? () => {} : (task: ReplicationTask): void => replicator.enqueue(task)

    if (resource === 'apps') {
      if (args.length === 0) return method === 'GET' ? sendCached(res, cache.get(`${format}:ALL_APPS`), format, gzip) : send(res, 405)
      if (args.length === 1 && args[0] === 'delta') {
        if (method !== 'GET') return send(res, 405)
        if (o.disableDelta) return send(res, 403)
        return sendCached(res, cache.get(`${format}:ALL_APPS_DELTA`), format, gzip)
      }
      const app = args[0]!.toUpperCase()
      if (args.length === 1) {
        if (method === 'GET') return sendCached(res, cache.get(`${format}:APP:${app}`), format, gzip)
        if (method === 'POST') return register(req, res, app, replicate)
        return send(res, 405)
      }
      const id = args[1]!
      if (args.length === 2) {
        switch (method) {
          case 'GET': {
            const lease = registry.instance(app, id)
            return lease === undefined ? send(res, 404) : send(res, 200, format === 'json' ? JSON_TYPE : XML_TYPE, encodeInstance(lease, format))
          }
          case 'PUT': return renew(res, app, id, q, replicate)
          case 'DELETE': {
            if (!registry.cancel(app, id)) return send(res, 404)
            replicate({ action: 'Cancel', app, id })
            return send(res, 200)
          }
          default: return send(res, 405)
        }
      }
      if (args.length === 3 && args[2] === 'status') {
        if (registry.instance(app, id) === undefined) return send(res, method === 'PUT' || method === 'DELETE' ? 404 : 405)
        const dirty = optionalNumber(q.get('lastDirtyTimestamp'))
        if (method === 'PUT') {
          // InstanceStatus.valueOf(value): a missing or unknown value is a 500 on a real server.
          const status = parseStatusStrict(q.get('value'))
          if (status === undefined) return send(res, 500, 'text/plain', `No enum constant InstanceStatus.${q.get('value')}`)
          if (!registry.statusUpdate(app, id, status, dirty)) return send(res, 500)
          replicate({ action: 'StatusUpdate', app, id, query: q.toString() })
          return send(res, 200)
        }
        if (method === 'DELETE') {
          const value = q.get('value')
          const status = value === null ? 'UNKNOWN' : parseStatusStrict(value)
          if (status === undefined) return send(res, 500, 'text/plain', `No enum constant InstanceStatus.${value}`)
          if (!registry.deleteStatusOverride(app, id, status, dirty)) return send(res, 500)
          replicate({ action: 'DeleteStatusOverride', app, id, query: q.toString() })
          return send(res, 200)
        }
        return send(res, 405)
      }
      if (args.length === 3 && args[2] === 'metadata') {
        if (method !== 'PUT') return send(res, 405)
        return send(res, registry.updateMetadata(app, id, q.entries()) ? 200 : 404)
      }
      return send(res, 404)
    }
    if (resource === 'instances' && args.length === 1) {
      if (method !== 'GET') return send(res, 405)
      const lease = registry.instanceById(args[0]!)
      return lease === undefined ? send(res, 404) : send(res, 200, format === 'json' ? JSON_TYPE : XML_TYPE, encodeInstance(lease, format))
    }
    if ((resource === 'vips' || resource === 'svips') && args.length === 1) {
      if (method !== 'GET') return send(res, 405)
      return sendCached(res, cache.get(`${format}:${resource === 'vips' ? 'VIP' : 'SVIP'}:${args[0]}`), format, gzip)
    }
    return send(res, 404)
  }

  async function register (req: IncomingMessage, res: ServerResponse, app: string, replicate: (task: ReplicationTask) => void): Promise<void> {
    const type = req.headers['content-type'] ?? ''
    if (type.includes('xml')) return send(res, 415, 'text/plain', 'This local Eureka server accepts JSON registrations only')
    let body: unknown
    try {
      body = JSON.parse(await readBody(req))
    } catch (err) {
      return send(res, 400, 'text/plain', `Cannot parse registration body: ${(err as Error).message}`)
    }
    const parsed = parseRegistration(body, app, o.strict, clock.now())
    if (!parsed.ok) return send(res, parsed.status, 'text/plain', parsed.message)
    registry.register(parsed.info)
    replicate({ action: 'Register', app, id: parsed.info.id, instance: instanceBody(app, parsed.info.id) })
    logger.info({ app, id: parsed.info.id, status: parsed.info.status }, `eureka: registered ${app}/${parsed.info.id} (${parsed.info.status})`)
    return send(res, 204)
  }

  function renew (res: ServerResponse, app: string, id: string, q: URLSearchParams, replicate: (task: ReplicationTask) => void): void {
    if (!registry.renew(app, id)) return send(res, 404)
    // A client whose copy is newer than ours must re-register (InstanceResource.validateDirtyTimestamp).
    const theirs = optionalNumber(q.get('lastDirtyTimestamp'))
    const ours = registry.lastDirtyTimestamp(app, id)
    if (theirs !== undefined && ours !== undefined && theirs > ours) return send(res, 404)
    const lease = registry.instance(app, id)
    const query = new URLSearchParams({ status: lease?.holder.status ?? 'UP', lastDirtyTimestamp: String(ours ?? clock.now()) })
    replicate({ action: 'Heartbeat', app, id, query: query.toString(), instance: instanceBody(app, id) })
    return send(res, 200)
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(o.port, o.host, () => { server.off('error', reject); resolve() })
  })
  const address = server.address() as AddressInfo
  const hostForUrl = address.family === 'IPv6' ? `[${address.address}]` : address.address
  const base = `http://${hostForUrl}:${address.port}/eureka`
  logger.info({ url: base }, `eureka: listening on ${base}`)

  return {
    url: base,
    serviceUrl: `${base}/apps/`,
    host: address.address,
    port: address.port,
    options: o,
    snapshot: () => registry.snapshot(),
    requests: () => log.slice(),
    refreshCache: () => cache.refresh(),
    evict: evictNow,
    selfPreservation: () => registry.selfPreservationState(),
    addPeer (url) { replicator.peers.push(url.replace(/\/+$/, '')) },
    replication: () => ({ peers: [...replicator.peers], pending: replicator.pending, ...replicator.stats }),
    async close () {
      if (closed) return
      closed = true
      replicator.close()
      for (const t of timers) clock.clearTimeout(t)
      timers.clear()
      cache.close()
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    }
  }
}

function optionalNumber (v: string | null): number | undefined {
  if (v === null || v === '') return undefined
  const n = Number(v)
  return Number.isFinite(n) ? n : undefined
}

function send (res: ServerResponse, status: number, type?: string, body?: string | Buffer, headers: Record<string, string> = {}): void {
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
