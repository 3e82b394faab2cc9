import { EventEmitter, once } from 'node:events'
import { createServer } from 'node:http'
import { createHttpHandler } from './http-api.ts'
import { DEFAULT_GROUP, DEFAULT_NAMESPACE, GROUP_SPLITTER, NamingStore, type ChangeReason, type DistroOp, type StoredInstance, type StoredService } from './naming-store.ts'
import { resolveServerOptions, type NacosServerOptions, type ResolvedNacosServerOptions } from './options.ts'
import { PushService, type PushRecord, type Subscriber } from './push-service.ts'
import { buildServiceInfo } from './service-info.ts'
import { ServiceStorage } from './service-storage.ts'

export interface ChangeEvent {
  namespaceId: string
  /** Grouped name, `GROUP@@name`. */
  service: string
  reason: ChangeReason
  ip: string
  port: number
  clusterName: string
  at: number
}

export interface BeatEvent {
  namespaceId: string
  service: string
  ip: string
  port: number
  clusterName: string
  /** 10200 ok, 20404 resource not found. */
  code: number
  outcome: 'ok' | 'registered' | 'not-found'
  /** A beat without the `beat` JSON (ip/port/clusterName params only). */
  light: boolean
}

export interface RequestEvent {
  method: string
  path: string
  query: Record<string, string>
  headers: Record<string, string | string[] | undefined>
}

export interface NacosServerEvents {
  change: [ChangeEvent]
  beat: [BeatEvent]
  request: [RequestEvent]
  subscribe: [Subscriber]
  unsubscribe: [Subscriber]
  push: [PushRecord]
  'push-ack': [PushRecord & { ackType: unknown }]
  'push-failed': [PushRecord]
}

export interface InstanceView extends Omit<StoredInstance, 'metadata'> { metadata: Record<string, string> }

export interface NacosServer {
  /** Base URL including the context path, e.g. http://127.0.0.1:8848/nacos. */
  url: string
  /** What clients take as `serverList`, e.g. 127.0.0.1:8848. */
  serverList: string
  host: string
  port: number
  /** Port of the UDP socket pushes are sent from (acks come back here). */
  udpPort: number
  options: Readonly<Omit<ResolvedNacosServerOptions, 'logger'>>
  events: EventEmitter<NacosServerEvents>
  /** Instances as the server holds them (every status), for assertions. */
  instances(service: string, where?: { namespaceId?: string, groupName?: string }): InstanceView[]
  /** The ServiceInfo the server would answer to GET /instance/list right now (the last push task's snapshot). */
  serviceInfo(service: string, where?: { namespaceId?: string, groupName?: string, clusters?: string, healthyOnly?: boolean }): ReturnType<typeof buildServiceInfo>
  subscribers(): Subscriber[]
  stats(): { pushes: { sent: number, acked: number, resent: number, failed: number }, services: number, instances: number }
  /** Runs the heartbeat check now instead of waiting for its period. */
  check(): void
  /** Turns UDP push on or off while running, e.g. to lose pushes from some moment on. */
  setPush(enabled: boolean): void
  close(): Promise<void>
}

/** Starts a local Nacos naming server (v1 HTTP API + UDP push) on `host:port`. */
export async function startNacos (options: NacosServerOptions = {}): Promise<NacosServer> {
  return (await startNacosNode(options)).server
}

/** A node of a cluster: `replicate` gets every change made here; `apply` takes the others' changes. */
export interface NacosNode { server: NacosServer, apply(op: DistroOp): void }

export async function startNacosNode (options: NacosServerOptions, replicate?: (op: DistroOp) => void): Promise<NacosNode> {
  const o = resolveServerOptions(options)
  let applying = false
  const events = new EventEmitter<NacosServerEvents>()
  const emit = (event: string, payload: unknown): void => { (events.emit as (e: string, p: unknown) => boolean)(event, payload) }
  const now = (): number => Date.now()
  let serverList = `${o.host}:${o.port}`

  const push: PushService = new PushService({
    ...o,
    now,
    emit,
    build: (s) => buildServiceInfo(storage.get(s.namespaceId, s.name), { name: s.name, groupName: s.groupName, clusters: s.clusters, healthyOnly: false }, { ...o, now: now() }),
    onTask: (namespaceId, name) => storage.refresh(namespaceId, name)
  })
  const store: NamingStore = new NamingStore({
    ...o,
    now,
    onChange (service, reason, instance) {
      const change: ChangeEvent = { namespaceId: service.namespaceId, service: service.name, reason, ip: instance.ip, port: instance.port, clusterName: instance.clusterName, at: now() }
      o.logger.info({ nacos: change }, `nacos: ${reason} ${service.name} ${instance.ip}:${instance.port} (${instance.clusterName}, ${service.namespaceId})`)
      emit('change', change)
      push.changed(service.namespaceId, service.name)
      if (replicate !== undefined && !applying) replicate(distroOp(service, reason, instance))
    },
    onBeat (service, instance) {
      if (replicate === undefined || applying) return
      replicate({ kind: 'beat', namespaceId: service.namespaceId, name: service.name, ip: instance.ip, port: instance.port, clusterName: instance.clusterName })
    }
  })
  const storage = new ServiceStorage(store)

  const http = createServer({ keepAliveTimeout: 30_000 }, createHttpHandler({ options: o, store, storage, push, serverList: () => serverList, emit, now }))
  http.listen(o.port, o.host)
  try {
    await once(http, 'listening')
  } catch (err) {
    await push.close()
    throw err
  }
  const address = http.address()
  const port = typeof address === 'object' && address !== null ? address.port : o.port
  const hostForUrl = o.host.includes(':') ? `[${o.host}]` : o.host
  serverList = `${hostForUrl}:${port}`
  const udpPort = await push.start()

  const checker = setInterval(() => store.check(), o.checkIntervalMs)
  checker.unref()

  const locate = (service: string, where: { namespaceId?: string, groupName?: string } = {}): { namespaceId: string, name: string, groupName: string } => {
    const namespaceId = where.namespaceId ?? DEFAULT_NAMESPACE
    if (service.includes(GROUP_SPLITTER)) return { namespaceId, name: service, groupName: service.split(GROUP_SPLITTER)[0]! }
    const groupName = where.groupName ?? DEFAULT_GROUP
    return { namespaceId, name: `${groupName}${GROUP_SPLITTER}${service}`, groupName }
  }

  let closing: Promise<void> | null = null
  const { logger: _logger, ...publicOptions } = o
  o.logger.info({ nacos: { url: `http://${serverList}/nacos`, udpPort } }, `nacos: naming server listening on http://${serverList}/nacos`)

  const server: NacosServer = {
    url: `http://${serverList}/nacos`,
    serverList,
    host: o.host,
    port,
    udpPort,
    options: { ...publicOptions, port },
    events,
    instances (service, where) {
      const { namespaceId, name } = locate(service, where)
      return [...(store.service(namespaceId, name)?.instances.values() ?? [])].map((i) => ({ ...i, metadata: { ...i.metadata } }))
    },
    serviceInfo (service, where = {}) {
      const { namespaceId, name, groupName } = locate(service, where)
      return buildServiceInfo(storage.get(namespaceId, name), { name, groupName, clusters: where.clusters ?? '', healthyOnly: where.healthyOnly ?? false }, { ...o, now: now() })
    },
    subscribers: () => push.subscribers(),
    stats () {
      const services = store.services()
      return { pushes: { ...push.stats }, services: services.length, instances: services.reduce((n, s) => n + s.instances.size, 0) }
    },
    check: () => store.check(),
    setPush (enabled) {
      push.setEnabled(enabled)
      o.logger.info({ nacos: { push: enabled } }, `nacos: push ${enabled ? 'on' : 'off'}`)
    },
    close () {
      closing ??= (async () => {
        clearInterval(checker)
        const closed = new Promise<void>((resolve) => http.close(() => resolve()))
        http.closeAllConnections()
        await Promise.all([closed, push.close()])
        store.clear()
        storage.clear()
        events.removeAllListeners()
        o.logger.info({}, `nacos: naming server on ${serverList} stopped`)
      })()
      return closing
    }
  }
  return {
    server,
    apply (op) {
      applying = true
      try { store.apply(op) } finally { applying = false }
    }
  }
}

function distroOp (service: StoredService, reason: ChangeReason, instance: StoredInstance): DistroOp {
  const { namespaceId, name, groupName } = service
  if (reason === 'deregister' || reason === 'expired') return { kind: 'remove', namespaceId, name, reason, ip: instance.ip, port: instance.port, clusterName: instance.clusterName }
  return { kind: 'upsert', namespaceId, name, groupName, reason, instance: { ...instance, metadata: { ...instance.metadata } } }
}
