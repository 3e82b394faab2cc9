// Open-loop gRPC load for the lab (`--transport grpc`): unary calls leave at a
// fixed rate whether or not earlier ones answered, from real grpc-js clients;
// each outcome is recorded and classified like the HTTP LoadGenerator's.
import { Metadata, status, type ServiceError } from '@grpc/grpc-js'
import type { Outcome, RequestRecord } from './load.ts'
import type { LoadSource } from './paths.ts'
import type { WorkChannel } from './grpc-work.ts'

export interface GrpcLoadOptions {
  /** The client for the next call (a channel on a lameduck:// target, one of several Service channels, or a plain pick). */
  client: () => WorkChannel
  rps: number
  /** Share of slow calls (0..1). Default 0.1. */
  slowShare?: number
  slowMs?: number
  fastMs?: number
  /** The calls' deadline. Default 10 000. */
  timeoutMs?: number
}

/** What the consumer saw, in the lab's outcome classes. */
export function classifyGrpc (err: ServiceError | Error): Outcome {
  const e = err as { code?: unknown, details?: string, message?: string }
  if (e.code === 'LAMEDUCK_ERR_NO_INSTANCE') return 'noInstance'
  const text = `${e.details ?? ''} ${e.message ?? ''}`
  if (e.code === status.DEADLINE_EXCEEDED) return 'timeout'
  if (/ECONNREFUSED/.test(text)) return 'refused'
  if (e.code === status.UNAVAILABLE || e.code === status.CANCELLED || e.code === status.INTERNAL) return 'reset'
  return 'other'
}

export class GrpcLoad implements LoadSource {
  readonly records: RequestRecord[] = []
  readonly #o: Required<GrpcLoadOptions>
  #timer: NodeJS.Timeout | null = null
  #start = 0
  #fired = 0
  #seq = 0
  #outstanding = new Set<Promise<void>>()

  constructor (options: GrpcLoadOptions) {
    this.#o = { slowShare: 0.1, slowMs: 300, fastMs: 2, timeoutMs: 10_000, ...options }
  }

  start (): void {
    this.#start = Date.now()
    this.#timer = setInterval(() => this.#tick(), 5)
  }

  #tick (): void {
    const due = Math.floor(((Date.now() - this.#start) * this.#o.rps) / 1000)
    while (this.#fired < due) {
      this.#fired++
      const p = this.#one()
      this.#outstanding.add(p)
      p.finally(() => this.#outstanding.delete(p)).catch(() => {})
    }
  }

  async #one (): Promise<void> {
    const every = this.#o.slowShare > 0 ? Math.round(1 / this.#o.slowShare) : 0
    const ms = every > 0 && this.#seq++ % every === 0 ? this.#o.slowMs : this.#o.fastMs
    const t0 = Date.now()
    const record: RequestRecord = { t: t0 - this.#start, ms: 0, outcome: 'ok', instance: null }
    try {
      const client = this.#o.client()
      const reply = await new Promise<{ id: string }>((resolve, reject) => {
        client.work({ ms }, new Metadata(), { deadline: t0 + this.#o.timeoutMs }, (err, res) => err ? reject(err) : resolve(res!))
      })
      record.instance = typeof reply?.id === 'string' ? reply.id : null
    } catch (err) {
      record.outcome = classifyGrpc(err as ServiceError)
      const e = err as { code?: unknown, details?: string }
      record.detail = typeof e.code === 'number' ? `${status[e.code]} ${e.details ?? ''}`.trim() : String(e.code ?? (err as Error).message)
    }
    record.ms = Date.now() - t0
    this.records.push(record)
  }

  async stop (): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
    await Promise.all(this.#outstanding)
  }
}
