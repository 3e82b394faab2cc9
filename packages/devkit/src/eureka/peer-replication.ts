// Replication to peer Eureka servers, as PeerEurekaNode does it: every register,
// cancel, heartbeat and status change a server takes from a client (not from a peer)
// is queued and sent to each peer in batches at most 500 ms apart (maxBatchingDelay),
// each request marked `x-netflix-discovery-replication: true` so the peer applies it
// without replicating it again. A heartbeat the peer answers with 404 is followed by a
// register, as the real node does.
import type { Clock, Logger, Timer } from '@lameduck/core'

export const REPLICATION_HEADER = 'x-netflix-discovery-replication'

export type ReplicationTask =
  | { action: 'Register', app: string, id: string, instance: () => string | undefined }
  | { action: 'Cancel', app: string, id: string }
  | { action: 'Heartbeat', app: string, id: string, query: string, instance: () => string | undefined }
  | { action: 'StatusUpdate' | 'DeleteStatusOverride', app: string, id: string, query: string }

export interface PeerReplicatorOptions {
  batchMs: number
  clock: Clock
  logger: Logger
}

export class PeerReplicator {
  readonly peers: string[] = []
  readonly #o: PeerReplicatorOptions
  #queue: ReplicationTask[] = []
  #timer: Timer | null = null
  #closed = false
  /** Batches and requests sent, for tests. */
  stats = { batches: 0, requests: 0, failures: 0 }

  constructor (options: PeerReplicatorOptions) {
    this.#o = options
  }

  enqueue (task: ReplicationTask): void {
    if (this.#closed || this.peers.length === 0) return
    this.#queue.push(task)
    if (this.#timer !== null) return
    this.#timer = this.#o.clock.setTimeout(() => { this.#timer = null; this.#flush() }, this.#o.batchMs)
    this.#timer.unref?.()
  }

  get pending (): number { return this.#queue.length }

  #flush (): void {
    const batch = this.#queue.splice(0)
    if (batch.length === 0) return
    this.stats.batches++
    for (const peer of this.peers) {
      this.#sendAll(peer, batch).catch((err: unknown) => this.#o.logger.warn({ err, peer }, `eureka: replication to ${peer} failed`))
    }
  }

  // In order per peer, so a cancel never overtakes the register it follows.
  async #sendAll (peer: string, batch: ReplicationTask[]): Promise<void> {
    for (const task of batch) {
      const status = await this.#send(peer, task)
      if (status === 404 && task.action === 'Heartbeat') {
        const body = task.instance()
        if (body !== undefined) await this.#request(peer, 'POST', `/apps/${task.app}`, body)
      }
    }
  }

  #send (peer: string, task: ReplicationTask): Promise<number> {
    const path = `/apps/${task.app}/${encodeURIComponent(task.id)}`
    switch (task.action) {
      case 'Register': {
        const body = task.instance()
        return body === undefined ? Promise.resolve(0) : this.#request(peer, 'POST', `/apps/${task.app}`, body)
      }
      case 'Cancel': return this.#request(peer, 'DELETE', path)
      case 'Heartbeat': return this.#request(peer, 'PUT', `${path}?${task.query}`)
      case 'StatusUpdate': return this.#request(peer, 'PUT', `${path}/status?${task.query}`)
      case 'DeleteStatusOverride': return this.#request(peer, 'DELETE', `${path}/status?${task.query}`)
    }
  }

  async #request (peer: string, method: string, path: string, body?: string): Promise<number> {
    this.stats.requests++
    try {
      const res = await fetch(peer + path, {
        method,
        headers: { [REPLICATION_HEADER]: 'true', accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body
      })
      await res.arrayBuffer()
      return res.status
    } catch (err) {
      this.stats.failures++
      this.#o.logger.debug({ err, peer, path }, `eureka: replication ${method} ${path} to ${peer} failed`)
      return 0
    }
  }

  close (): void {
    this.#closed = true
    if (this.#timer !== null) this.#o.clock.clearTimeout(this.#timer)
    this.#timer = null
    this.#queue = []
  }
}
