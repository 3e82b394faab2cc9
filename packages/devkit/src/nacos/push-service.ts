import dgram from 'node:dgram'
import { once } from 'node:events'
import { gzipSync } from 'node:zlib'
import type { Logger } from '@lameduck/core'
import type { ServiceInfoJson } from './service-info.ts'

// UDP push to v1 subscribers, as UdpPushService does it: a change schedules a push
// task `pushDelayMs` later (changes in between merge, keeping the earliest time),
// and the task engine runs due tasks on its fixed 100 ms check (NacosDelayTaskExecuteEngine).
// The task first refreshes the service's ServiceInfo snapshot, which `/instance/list`
// serves (ServiceStorage; PushExecuteTask), whether or not pushes go out; then it pushes
// {"type":"dom","data":"<ServiceInfo>","lastRefTime":n} to every subscriber that listed
// the service recently. A missing push-ack is resent `pushRetries` times after `pushAckTimeoutMs`.

export interface Subscriber {
  namespaceId: string
  /** Grouped name, `GROUP@@name`. */
  name: string
  groupName: string
  /** Clusters exactly as the subscriber asked for them. */
  clusters: string
  /** Where pushes go. */
  address: string
  port: number
  agent: string
  lastSeen: number
}

export interface PushRecord {
  subscriber: Subscriber
  lastRefTime: number
  bytes: number
  gzip: boolean
  attempt: number
  hosts: number
}

export interface PushServiceOptions {
  host: string
  push: boolean
  pushDelayMs: number
  /** The task engine's check period: 100 ms on a real server, a fixed delay that scaled labs must not scale. */
  pushCheckIntervalMs: number
  pushAckTimeoutMs: number
  pushRetries: number
  subscriberTtlMs: number
  logger: Logger
  now: () => number
  build: (subscriber: Subscriber) => ServiceInfoJson
  /** The push task runs for a service: refresh its snapshot (before any push). */
  onTask: (namespaceId: string, name: string) => void
  emit: (event: string, payload: unknown) => void
}

interface Pending { record: PushRecord, packet: Buffer, timer: NodeJS.Timeout }

const GZIP_FROM_BYTES = 1024

export class PushService {
  readonly #o: PushServiceOptions
  readonly #socket: dgram.Socket
  readonly #subscribers = new Map<string, Subscriber>()
  /** Due time of each service's push task. */
  readonly #tasks = new Map<string, { namespaceId: string, name: string, due: number }>()
  #engine: NodeJS.Timeout | null = null
  readonly #pending = new Map<number, Pending>()
  #lastRefTime = 0
  #closed = false
  #enabled: boolean
  stats = { sent: 0, acked: 0, resent: 0, failed: 0 }

  constructor (options: PushServiceOptions) {
    this.#o = options
    this.#enabled = options.push
    this.#socket = dgram.createSocket('udp4')
    this.#socket.on('message', (msg, rinfo) => this.#onAck(msg, rinfo))
    this.#socket.on('error', (err) => options.logger.warn({ err }, `nacos: push socket error: ${err.message}`))
  }

  async start (): Promise<number> {
    this.#socket.bind(0, this.#o.host)
    await once(this.#socket, 'listening')
    this.#socket.unref()
    return this.#socket.address().port
  }

  /** Records (or refreshes) a subscriber from a list call. */
  subscribe (subscriber: Subscriber): void {
    const key = `${subscriber.namespaceId}>${subscriber.name}>${subscriber.clusters}>${subscriber.address}:${subscriber.port}`
    const known = this.#subscribers.has(key)
    this.#subscribers.set(key, subscriber)
    if (!known) this.#o.emit('subscribe', subscriber)
  }

  subscribers (): Subscriber[] {
    this.#expire()
    return [...this.#subscribers.values()].map((s) => ({ ...s }))
  }

  /** A service changed: its push task runs after the push delay, at the engine's next check. */
  changed (namespaceId: string, name: string): void {
    if (this.#closed) return
    const key = `${namespaceId}>${name}`
    if (this.#tasks.has(key)) return // merged: the earlier task's time stays
    this.#tasks.set(key, { namespaceId, name, due: this.#o.now() + this.#o.pushDelayMs })
    this.#engine ??= setInterval(() => this.#processTasks(), this.#o.pushCheckIntervalMs)
    this.#engine.unref()
  }

  #processTasks (): void {
    const now = this.#o.now()
    for (const [key, task] of this.#tasks) {
      if (task.due > now) continue
      this.#tasks.delete(key)
      this.#o.onTask(task.namespaceId, task.name)
      if (this.#enabled) this.#pushNow(task.namespaceId, task.name)
    }
    if (this.#tasks.size === 0 && this.#engine !== null) {
      clearInterval(this.#engine)
      this.#engine = null
    }
  }

  #expire (): void {
    const now = this.#o.now()
    for (const [key, s] of this.#subscribers) {
      if (now - s.lastSeen > this.#o.subscriberTtlMs) {
        this.#subscribers.delete(key)
        this.#o.emit('unsubscribe', s)
      }
    }
  }

  #pushNow (namespaceId: string, name: string): void {
    this.#expire()
    for (const subscriber of this.#subscribers.values()) {
      if (subscriber.namespaceId !== namespaceId || subscriber.name !== name) continue
      // The pushed ServiceInfo (PushExecutorUdpImpl.replaceServiceInfoName) carries no groupName.
      const { groupName: _groupName, ...info } = this.#o.build(subscriber)
      // Real servers use System.nanoTime(); kept below 2^53 so the ack echoes it exactly.
      const lastRefTime = this.#lastRefTime = Math.max(this.#lastRefTime + 1, Date.now() * 1000)
      let packet = Buffer.from(JSON.stringify({ type: 'dom', data: JSON.stringify(info), lastRefTime }))
      const gzip = packet.length >= GZIP_FROM_BYTES
      if (gzip) packet = gzipSync(packet)
      const record: PushRecord = { subscriber: { ...subscriber }, lastRefTime, bytes: packet.length, gzip, attempt: 1, hosts: info.hosts.length }
      this.#send(record, packet)
    }
  }

  #send (record: PushRecord, packet: Buffer): void {
    if (this.#closed) return
    const { address, port } = record.subscriber
    this.#socket.send(packet, port, address, (err) => {
      if (err !== null && err !== undefined) this.#o.logger.warn({ err }, `nacos: push to ${address}:${port} failed: ${err.message}`)
    })
    this.stats.sent++
    if (record.attempt > 1) this.stats.resent++
    const timer = setTimeout(() => this.#onAckTimeout(record.lastRefTime), this.#o.pushAckTimeoutMs)
    timer.unref()
    this.#pending.set(record.lastRefTime, { record, packet, timer })
    this.#o.logger.debug({ nacos: { push: record } }, `nacos: push ${record.subscriber.name} (${record.hosts} hosts) to ${address}:${port}`)
    this.#o.emit('push', { ...record })
  }

  #onAckTimeout (lastRefTime: number): void {
    const pending = this.#pending.get(lastRefTime)
    if (pending === undefined) return
    this.#pending.delete(lastRefTime)
    const { record, packet } = pending
    if (record.attempt <= this.#o.pushRetries) {
      this.#send({ ...record, attempt: record.attempt + 1 }, packet)
      return
    }
    this.stats.failed++
    this.#o.logger.info({ nacos: { push: record } }, `nacos: no push-ack from ${record.subscriber.address}:${record.subscriber.port} after ${record.attempt} attempt(s)`)
    this.#o.emit('push-failed', { ...record })
  }

  #onAck (msg: Buffer, rinfo: dgram.RemoteInfo): void {
    let ack: { type?: unknown, lastRefTime?: unknown }
    try {
      ack = JSON.parse(msg.toString('utf8')) as typeof ack
    } catch {
      this.#o.logger.debug({}, `nacos: ignoring a non-JSON UDP packet from ${rinfo.address}:${rinfo.port}`)
      return
    }
    const pending = typeof ack.lastRefTime === 'number' ? this.#pending.get(ack.lastRefTime) : undefined
    if (pending === undefined) return
    clearTimeout(pending.timer)
    this.#pending.delete(pending.record.lastRefTime)
    this.stats.acked++
    this.#o.emit('push-ack', { ...pending.record, ackType: ack.type })
  }

  /** Turns pushing on or off at runtime (off: pushes are lost, clients fall back to polling). */
  setEnabled (enabled: boolean): void {
    this.#enabled = enabled
  }

  get enabled (): boolean {
    return this.#enabled
  }

  /** Forgets subscribers and pending pushes (a restarted server knows none). */
  reset (): void {
    if (this.#engine !== null) clearInterval(this.#engine)
    this.#engine = null
    for (const p of this.#pending.values()) clearTimeout(p.timer)
    this.#tasks.clear()
    this.#pending.clear()
    this.#subscribers.clear()
  }

  async close (): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.reset()
    await new Promise<void>((resolve) => this.#socket.close(() => resolve()))
  }
}
