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
  let serverList = `${o.host}:${o.port}`
  const naming = createNaming(o, emit, replicate === undefined ? undefined : (op) => { if (!applying) replicate(op) })

  const http = createServer({ keepAliveTimeout: 30_000 }, createHttpHandler({ options: o, ...naming, serverList: () => serverList, emit, now }))
  http.listen(o.port, o.host)
  try {
    await once(http, 'listening')
  } catch (err) {
    await naming.push.close()
    throw err
  }
  const address = http.address()
  const port = typeof address === 'object' && address !== null ? address.port : o.port
  const hostForUrl = o.host.includes(':') ? `[${o.host}]` : o.host
  serverList = `${hostForUrl}:${port}`
  const udpPort = await naming.push.start()
  const checker = setInterval(() => naming.store.check(), o.checkIntervalMs)
  checker.unref()
  o.logger.info({ nacos: { url: `http://${serverList}/nacos`, udpPort } }, `nacos: naming server listening on http://${serverList}/nacos`)

  const close = async (): Promise<void> => {
    clearInterval(checker)
    const closed = new Promise<void>((resolve) => http.close(() => resolve()))
    http.closeAllConnections()
    await Promise.all([closed, naming.push.close()])
    naming.store.clear()
    naming.storage.clear()
    events.removeAllListeners()
    o.logger.info({}, `nacos: naming server on ${serverList} stopped`)
  }
  return {
    server: serverView(o, naming, { serverList, port, udpPort, events, close }),
    apply (op) {
      applying = true
      try { naming.store.apply(op) } finally { applying = false }
    }
  }
}

const now = (): number => Date.now()

interface Naming { push: PushService, store: NamingStore, storage: ServiceStorage }

/** The store, its push service and its storage, wired: a change is logged, emitted, pushed and replicated. */
function createNaming (o: ResolvedNacosServerOptions, emit: (event: string, payload: unknown) => void, replicate: ((op: DistroOp) => void) | undefined): Naming {
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
      replicate?.(distroOp(service, reason, instance))
    },
    onBeat (service, instance) {
      replicate?.({ kind: 'beat', namespaceId: service.namespaceId, name: service.name, ip: instance.ip, port: instance.port, clusterName: instance.clusterName })
    }
  })
  const storage = new ServiceStorage(store)
  return { push, store, storage }
}

function locate (service: string, where: { namespaceId?: string, groupName?: string } = {}): { namespaceId: string, name: string, groupName: string } {
  const namespaceId = where.namespaceId ?? DEFAULT_NAMESPACE
  if (service.includes(GROUP_SPLITTER)) return { namespaceId, name: service, groupName: service.split(GROUP_SPLITTER)[0]! }
  const groupName = where.groupName ?? DEFAULT_GROUP
  return { namespaceId, name: `${groupName}${GROUP_SPLITTER}${service}`, groupName }
}

interface Running { serverList: string, port: number, udpPort: number, events: EventEmitter<NacosServerEvents>, close: () => Promise<void> }

/** The handle tests hold: addresses, what the server holds, and its controls. */
function serverView (o: ResolvedNacosServerOptions, { push, store, storage }: Naming, r: Running): NacosServer {
  const { logger: _logger, ...publicOptions } = o
  let closing: Promise<void> | null = null
  return {
    url: `http://${r.serverList}/nacos`,
    serverList: r.serverList,
    host: o.host,
    port: r.port,
    udpPort: r.udpPort,
    options: { ...publicOptions, port: r.port },
    events: r.events,
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
    close: () => (closing ??= r.close())
  }
}

function distroOp (service: StoredService, reason: ChangeReason, instance: StoredInstance): DistroOp {
  const { namespaceId, name, groupName } = service
  if (reason === 'deregister' || reason === 'expired') return { kind: 'remove', namespaceId, name, reason, ip: instance.ip, port: instance.port, clusterName: instance.clusterName }
  return { kind: 'upsert', namespaceId, name, groupName, reason, instance: { ...instance, metadata: { ...instance.metadata } } }
}
