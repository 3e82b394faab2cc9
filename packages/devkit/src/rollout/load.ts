// Open-loop load: requests leave at a fixed rate whether or not earlier ones
// have answered, the way independent users arrive. Each outcome is recorded
// and classified by what the client saw.
import { request, type Dispatcher } from 'undici'
import { TRACE_HEADER, type RequestTrace } from './trace.ts'

export type Outcome = 'ok' | 'refused' | 'noInstance' | 'reset' | 'status5xx' | 'timeout' | 'other'

export interface RequestRecord {
  /** ms since the load started. */
  t: number
  ms: number
  outcome: Outcome
  instance: string | null
  detail?: string
  /** A failed request's last attempt (when the consumer's pools are traced): its origin, and ms until it had a socket (absent: it never got one). */
  to?: string
  socketMs?: number
}

export interface LoadOptions {
  /** Builds the request URL for a path (service name or Service address). */
  url: (path: string) => string
  dispatcher: Dispatcher
  rps: number
  /** Share of slow requests (0..1). Default 0.1. */
  slowShare?: number
  slowMs?: number
  fastMs?: number
  timeoutMs?: number
  /** Cap on requests outstanding at once (a protection, not a pacing). Default 5000. */
  maxOutstanding?: number
  /** Records where each request went (the consumer's pools must be built with its factory). */
  trace?: RequestTrace
}

const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_DESTROYED', 'ECONNABORTED'])
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT'])

export function classify (err: unknown): Outcome {
  const e = err as { code?: string, name?: string, cause?: { code?: string } }
  const code = e?.code ?? e?.cause?.code
  if (code === 'ECONNREFUSED') return 'refused'
  // The consumer's balancer had no instance to pick: none visible yet, or all gone.
  if (code === 'LAMEDUCK_ERR_NO_INSTANCE') return 'noInstance'
  if (code !== undefined && RESET_CODES.has(code)) return 'reset'
  if ((code !== undefined && TIMEOUT_CODES.has(code)) || e?.name === 'TimeoutError') return 'timeout'
  return 'other'
}

export class LoadGenerator {
  readonly records: RequestRecord[] = []
  readonly #o: Required<Omit<LoadOptions, 'trace'>>
  readonly #trace: RequestTrace | undefined
  #timer: NodeJS.Timeout | null = null
  #start = 0
  #fired = 0
  #outstanding = new Set<Promise<void>>()
  #seq = 0

  constructor (options: LoadOptions) {
    const { trace, ...rest } = options
    this.#o = { slowShare: 0.1, slowMs: 300, fastMs: 2, timeoutMs: 10_000, maxOutstanding: 5_000, ...rest }
    this.#trace = trace
  }

  get elapsedMs (): number { return Date.now() - this.#start }
  get outstanding (): number { return this.#outstanding.size }

  start (): void {
    this.#start = Date.now()
    this.#timer = setInterval(() => this.#tick(), 5)
  }

  #tick (): void {
    const due = Math.floor(((Date.now() - this.#start) * this.#o.rps) / 1000)
    while (this.#fired < due) {
      this.#fired++
      if (this.#outstanding.size >= this.#o.maxOutstanding) {
        this.records.push({ t: Date.now() - this.#start, ms: 0, outcome: 'other', instance: null, detail: 'client overloaded' })
        continue
      }
      const p = this.#one()
      this.#outstanding.add(p)
      p.finally(() => this.#outstanding.delete(p)).catch(() => {})
    }
  }

  async #one (): Promise<void> {
    // Deterministic mix: every 1/slowShare-th request is slow.
    const every = this.#o.slowShare > 0 ? Math.round(1 / this.#o.slowShare) : 0
    const seq = this.#seq++
    const slow = every > 0 && seq % every === 0
    const ms = slow ? this.#o.slowMs : this.#o.fastMs
    const t0 = Date.now()
    const record: RequestRecord = { t: t0 - this.#start, ms: 0, outcome: 'ok', instance: null }
    const id = String(seq)
    this.#trace?.fired(id, t0)
    try {
      // url() picks the instance for a plain consumer, and may find none.
      const res = await request(this.#o.url(`/work?ms=${ms}`), {
        dispatcher: this.#o.dispatcher,
        ...(this.#trace === undefined ? {} : { headers: { [TRACE_HEADER]: id } }),
        headersTimeout: this.#o.timeoutMs,
        bodyTimeout: this.#o.timeoutMs,
        signal: AbortSignal.timeout(this.#o.timeoutMs + 1_000)
      })
      const instance = res.headers['x-instance']
      record.instance = typeof instance === 'string' ? instance : null
      await res.body.dump()
      if (res.statusCode >= 500) { record.outcome = 'status5xx'; record.detail = String(res.statusCode) } else if (res.statusCode >= 400) { record.outcome = 'other'; record.detail = String(res.statusCode) }
    } catch (err) {
      record.outcome = classify(err)
      record.detail = (err as { code?: string }).code ?? (err as Error).message
    }
    record.ms = Date.now() - t0
    const hop = this.#trace?.take(id)
    if (hop !== undefined && record.outcome !== 'ok') {
      record.to = hop.origin
      if (hop.socketMs !== undefined) record.socketMs = hop.socketMs
    }
    this.records.push(record)
  }

  /** Stops sending and waits for what is outstanding. */
  async stop (): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
    await Promise.all(this.#outstanding)
  }
}
