// A local Eureka server over node:http, faithful to what eureka-js-client and
// Java Eureka clients rely on: REST v2 under /eureka and /eureka/v2, the
// two-level response cache, the delta queue, leases, eviction and status overrides.
import { createServer, type RequestListener, type Server } from 'node:http'
import type { Clock, Logger } from '@lameduck/core'
import type { AddressInfo } from 'node:net'
import { startBackgroundTasks } from './background-tasks.ts'
import { createCachedRegistry } from './cached-registry.ts'
import { createEurekaHandler, send } from './http-api.ts'
import type { InstanceRegistry } from './instance-registry.ts'
import { resolveEurekaServerOptions, type EurekaServerOptions, type ResolvedEurekaServerOptions } from './options.ts'
import { PeerReplicator } from './peer-replication.ts'

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

/** Starts a local Eureka server; resolves once it listens. */
export async function startEureka (options: EurekaServerOptions = {}): Promise<EurekaServer> {
  const o = resolveEurekaServerOptions(options)
  const { clock, logger } = o
  const log: EurekaRequestRecord[] = []
  const { registry, cache } = createCachedRegistry(o)
  const tasks = startBackgroundTasks(o, registry)
  const replicator = new PeerReplicator({ batchMs: o.replicationBatchMs, clock, logger })
  replicator.peers.push(...o.peerUrls)
  const handle = createEurekaHandler({ registry, cache, replicator, strict: o.strict, disableDelta: o.disableDelta, clock, logger })

  const server = createServer(requestListener(handle, log, o))
  server.keepAliveTimeout = 30_000

  try {
    await listen(server, o.port, o.host)
  } catch (err) {
    tasks.close()
    cache.close()
    throw err
  }
  let closed = false
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
    evict: () => tasks.evictNow(),
    selfPreservation: () => registry.selfPreservationState(),
    addPeer (url) { replicator.peers.push(url.replace(/\/+$/, '')) },
    replication: () => ({ peers: [...replicator.peers], pending: replicator.pending, ...replicator.stats }),
    async close () {
      if (closed) return
      closed = true
      replicator.close()
      tasks.close()
      cache.close()
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    }
  }
}

/** Runs the handler, records each request (the last 1000) and answers 500 for what it throws. */
function requestListener (handle: ReturnType<typeof createEurekaHandler>, log: EurekaRequestRecord[], { clock, logger }: { clock: Clock, logger: Logger }): RequestListener {
  return (req, res) => {
    const path = req.url ?? '/'
    const method = req.method ?? 'GET'
    res.on('finish', () => {
      log.push({ at: clock.now(), method, path, status: res.statusCode })
      if (log.length > 1000) log.splice(0, log.length - 1000)
      logger.debug({ method, path, status: res.statusCode }, `eureka: ${method} ${path} ${res.statusCode}`)
    })
    handle(req, res).catch((err: unknown) => {
      logger.error({ err }, 'eureka: request failed')
      if (!res.headersSent) send(res, 500, 'text/plain', String(err))
      else res.destroy()
    })
  }
}

function listen (server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => { server.off('error', reject); resolve() })
  })
}
