import { redactText, type Logger } from '@lameduck/core'
import type { BeatAnswer, SdkBridge, UpdateSource } from './sdk-bridge.ts'
import type { HostsListener, NamingClient, SdkHost, SdkInstance, ServiceInfoData, SubscribeInfo } from './sdk-types.ts'

// The Nacos 3.x client open API (naming InstanceOpenApiController, /nacos/v3/client/ns/instance),
// which Nacos 3.x serves to clients that cannot speak gRPC -- and keeps serving when 3.2+ turns the
// 1.x API off. Register is a POST, a heartbeat the same POST with heartBeat=true (code 21003 when
// the server does not know the instance: register again), deregister a DELETE, and the list a GET
// answering the hosts without `enabled=false` ones. It has no push: discovery polls the list
// every `pollIntervalMs`. Same face as the SDK bridge, so registry and discovery code is shared.

const PATH = '/nacos/v3/client/ns/instance'
/** ErrorCode.INSTANCE_NOT_FOUND: a heartbeat for an instance the server does not know. */
const INSTANCE_NOT_FOUND = 21003
const NOT_FOUND_AS_V1 = 20404
const OK_AS_V1 = 10200

export interface V3Settings {
  servers: readonly string[]
  namespace: string
  ssl: boolean
  pollIntervalMs: number
  requestTimeoutMs: number
  logger: Logger
}

interface Answer<T> { code: number, message?: string, data: T }

type Listener = (data: ServiceInfoData, source: UpdateSource) => void

interface Poll { info: Required<SubscribeInfo>, timer: NodeJS.Timeout | null, listeners: Set<HostsListener>, running: boolean }

function split (groupedOrPlain: string, group: string | undefined): { serviceName: string, groupName: string } {
  const at = groupedOrPlain.indexOf('@@')
  return at < 0 ? { serviceName: groupedOrPlain, groupName: group ?? 'DEFAULT_GROUP' } : { serviceName: groupedOrPlain.slice(at + 2), groupName: groupedOrPlain.slice(0, at) }
}

type Call = <T>(method: string, params: Record<string, string | number | boolean>, path?: string) => Promise<Answer<T>>

/** One call, tried on each server in turn (from a rotating start) on network errors and 5xx. */
function v3Caller (s: V3Settings): Call {
  let next = 0
  return async function call<T> (method: string, params: Record<string, string | number | boolean>, path = ''): Promise<Answer<T>> {
    const query = new URLSearchParams(Object.entries({ namespaceId: s.namespace, ...params }).map(([k, v]): [string, string] => [k, String(v)]))
    let last: Error | undefined
    const start = next++
    for (let i = 0; i < s.servers.length; i++) {
      const server = s.servers[(start + i) % s.servers.length]!
      const url = `${s.ssl ? 'https' : 'http'}://${/:\d+$/.test(server) ? server : `${server}:8848`}${PATH}${path}?${query}`
      try {
        const res = await fetch(url, { method, signal: AbortSignal.timeout(s.requestTimeoutMs) })
        const text = await res.text()
        if (res.status >= 500) { last = new Error(`${method} ${PATH}${path} on ${server}: HTTP ${res.status} ${redactText(text.slice(0, 300))}`); continue }
        let body: Answer<T>
        try { body = JSON.parse(text) as Answer<T> } catch { throw new Error(`${method} ${PATH}${path} on ${server}: HTTP ${res.status}, not JSON: ${redactText(text.slice(0, 300))}`) }
        if (res.status !== 200 && body.code !== INSTANCE_NOT_FOUND) throw new Error(`${method} ${PATH}${path} on ${server}: HTTP ${res.status} code ${body.code}: ${redactText(String(body.message ?? ''))}`)
        return body
      } catch (err) {
        if ((err as Error).message.startsWith(`${method} ${PATH}`)) throw err
        last = new Error(`${method} ${PATH}${path} on ${server}: ${(err as Error).message}`, { cause: err })
      }
    }
    throw last ?? new Error('no Nacos server configured')
  }
}

/** An instance as the v3 client API's form fields. */
function form (service: string, instance: SdkInstance, group: string | undefined): Record<string, string | number | boolean> {
  return {
    ...split(service, group),
    ip: instance.ip,
    port: instance.port,
    clusterName: instance.clusterName ?? 'DEFAULT',
    weight: instance.weight ?? 1,
    enabled: instance.enabled ?? true,
    healthy: instance.healthy ?? true,
    ephemeral: true,
    metadata: JSON.stringify(instance.metadata ?? {})
  }
}

/** Polled discovery (the v3 client API has no push): one timer per subscribed service. */
function v3Polls (s: V3Settings, call: Call, listeners: Listener[]) {
  const polls = new Map<string, Poll>()
  let closed = false

  async function pollOnce (key: string): Promise<void> {
    const poll = polls.get(key)
    if (poll === undefined || poll.running || closed) return
    poll.running = true
    try {
      const { serviceName, groupName, clusters } = poll.info
      const answer = await call<SdkHost[] | null>('GET', { serviceName, groupName, clusterName: clusters }, '/list')
      const hosts = Array.isArray(answer.data) ? answer.data : []
      const data: ServiceInfoData = { name: `${groupName}@@${serviceName}`, clusters, cacheMillis: s.pollIntervalMs, hosts }
      for (const fn of listeners) fn(data, 'poll')
      for (const fn of poll.listeners) fn(hosts)
    } catch (err) {
      s.logger.warn({ err, nacos: { service: poll.info.serviceName } }, `nacos v3: polling ${poll.info.serviceName} failed: ${(err as Error).message}`)
    } finally {
      poll.running = false
      if (!closed && polls.get(key) === poll) {
        poll.timer = setTimeout(() => { pollOnce(key).catch(() => {}) }, s.pollIntervalMs)
        poll.timer.unref()
      }
    }
  }

  return {
    subscribe (info: SubscribeInfo | string, listener: HostsListener): void {
      const i = typeof info === 'string' ? { serviceName: info } : info
      const full = { serviceName: i.serviceName, groupName: i.groupName ?? 'DEFAULT_GROUP', clusters: i.clusters ?? '' }
      const key = `${full.groupName}@@${full.serviceName}@@${full.clusters}`
      let poll = polls.get(key)
      if (poll === undefined) {
        poll = { info: full, timer: null, listeners: new Set(), running: false }
        polls.set(key, poll)
        pollOnce(key).catch(() => {})
      }
      poll.listeners.add(listener)
    },
    unSubscribe (info: SubscribeInfo | string, listener?: HostsListener): void {
      const i = typeof info === 'string' ? { serviceName: info } : info
      const key = `${i.groupName ?? 'DEFAULT_GROUP'}@@${i.serviceName}@@${i.clusters ?? ''}`
      const poll = polls.get(key)
      if (poll === undefined) return
      if (listener !== undefined) poll.listeners.delete(listener)
      if (listener === undefined || poll.listeners.size === 0) {
        if (poll.timer !== null) clearTimeout(poll.timer)
        polls.delete(key)
      }
    },
    close (): void {
      closed = true
      for (const poll of polls.values()) if (poll.timer !== null) clearTimeout(poll.timer)
      polls.clear()
    }
  }
}

export function createV3Bridge (s: V3Settings): SdkBridge {
  const listeners: Listener[] = []
  const call = v3Caller(s)
  const polls = v3Polls(s, call, listeners)

  const client: NamingClient = {
    ready: async () => {},
    async registerInstance (service, instance, group) {
      await call('POST', form(service, instance, group))
    },
    async deregisterInstance (service, instance, group) {
      await call('DELETE', form(service, instance, group))
    },
    subscribe: (info, listener) => { polls.subscribe(info, listener) },
    unSubscribe: (info, listener) => { polls.unSubscribe(info, listener) },
    getServerStatus: async () => 'UP',
    close: async () => {},
    on: () => client
  }

  return {
    client,
    ownBeats: true,
    observing: true,
    ready: async () => {},
    async sendBeat (groupedService, beat): Promise<BeatAnswer> {
      const b = beat as { ip: string, port: number, cluster?: string }
      const answer = await call('POST', { ...split(groupedService, undefined), ip: b.ip, port: b.port, clusterName: b.cluster ?? 'DEFAULT', heartBeat: true })
      return { code: answer.code === INSTANCE_NOT_FOUND ? NOT_FOUND_AS_V1 : OK_AS_V1, clientBeatInterval: undefined }
    },
    onServiceInfo (listener) { listeners.push(listener) },
    udpPort: () => 0,
    pushes: () => undefined,
    async close () {
      listeners.length = 0
      polls.close()
    }
  }
}
