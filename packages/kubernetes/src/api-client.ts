// A small client for the few calls lameduck makes: GET a JSON object, and a watch read
// line by line. Over node:http(s), so every byte is bounded (a response body, a watch line)
// and every wait has a deadline (the answer's headers, a watch that should have ended).
import http from 'node:http'
import https from 'node:https'
import type { ApiConnection } from './connection.ts'
import { KubernetesApiError, KubernetesStreamError } from './errors.ts'
import { LineSplitter, LineTooLongError } from './lines.ts'

export interface ApiClientSettings {
  /** Headers of an answer, and a whole non-watch answer, within this. */
  requestTimeoutMs: number
  /** Largest watch event (one line) and, x4, largest response body. */
  maxEventBytes: number
}

export interface WatchCall {
  signal: AbortSignal
  /** Called for each complete line, in order. Throwing ends the watch with that error. */
  onLine: (line: string) => void
  /** The stream is cut as hung when still open this long after it started. */
  deadlineMs: number
  /** The server accepted the watch (200). */
  onOpen?: () => void
}

interface StatusBody { reason?: unknown, message?: unknown }

/** What a request sends besides a GET's defaults. */
interface Send { method?: string, body?: Buffer, contentType?: string, accept?: string }

/** The Status the API server sends with an error, read as far as it is one. */
export function apiError (status: number, body: string, what: string): KubernetesApiError {
  let parsed: StatusBody = {}
  try { parsed = JSON.parse(body) as StatusBody } catch { /* not JSON: a proxy's page */ }
  const reason = typeof parsed?.reason === 'string' ? parsed.reason : ''
  const message = typeof parsed?.message === 'string' ? parsed.message : body.slice(0, 200).trim() || http.STATUS_CODES[status] || 'no message'
  return new KubernetesApiError(status, reason, what, message.slice(0, 500))
}

export class ApiClient {
  readonly #conn: ApiConnection
  readonly #s: ApiClientSettings
  readonly #agent: http.Agent

  constructor (conn: ApiConnection, settings: ApiClientSettings) {
    this.#conn = conn
    this.#s = settings
    this.#agent = conn.server.protocol === 'https:'
      ? new https.Agent({ keepAlive: true, ca: conn.ca, cert: conn.cert, key: conn.key, rejectUnauthorized: !conn.insecure })
      : new http.Agent({ keepAlive: true })
  }

  get server (): string { return this.#conn.server.origin }

  /** GET `path` as JSON. A 401 reads the token again and tries once more (it may have rotated). */
  async getJson (path: string, what: string, signal?: AbortSignal, accept = 'application/json'): Promise<unknown> {
    return await this.#call(path, what, signal, { accept })
  }

  /** PATCH `path` with `body` as `contentType` (a strategic merge patch, a merge patch...); the answer as JSON. */
  async patchJson (path: string, body: unknown, contentType: string, what: string, signal?: AbortSignal): Promise<unknown> {
    return await this.#call(path, what, signal, { method: 'PATCH', body: Buffer.from(JSON.stringify(body)), contentType })
  }

  /** POST `body` as JSON to `path` (create an object, e.g. an Event); the answer as JSON. */
  async postJson (path: string, body: unknown, what: string, signal?: AbortSignal): Promise<unknown> {
    return await this.#call(path, what, signal, { method: 'POST', body: Buffer.from(JSON.stringify(body)), contentType: 'application/json' })
  }

  async #call (path: string, what: string, signal: AbortSignal | undefined, send: Send): Promise<unknown> {
    try {
      return await this.#callOnce(path, what, signal, send)
    } catch (err) {
      if (!(err instanceof KubernetesApiError) || err.status !== 401) throw err
      this.#conn.tokenRejected()
      return await this.#callOnce(path, what, signal, send)
    }
  }

  async #callOnce (path: string, what: string, signal: AbortSignal | undefined, send: Send): Promise<unknown> {
    const timeout = AbortSignal.timeout(this.#s.requestTimeoutMs)
    const both = signal === undefined ? timeout : AbortSignal.any([signal, timeout])
    const res = await this.#open(path, what, both, undefined, send)
    const body = await this.#readAll(res, what, both)
    if (res.statusCode !== 200 && res.statusCode !== 201) throw apiError(res.statusCode ?? 0, body, what)
    try {
      return JSON.parse(body)
    } catch {
      throw new KubernetesStreamError(what, `the answer is not JSON (${body.length} bytes, starting ${JSON.stringify(body.slice(0, 40))})`)
    }
  }

  /** Reads a watch until the server ends it (resolves) or it fails, hangs or is aborted (rejects). */
  async watch (path: string, what: string, call: WatchCall): Promise<void> {
    const deadline = AbortSignal.timeout(call.deadlineMs)
    const both = AbortSignal.any([call.signal, deadline])
    const res = await this.#open(path, what, both, this.#s.requestTimeoutMs)
    if (res.statusCode !== 200) {
      const err = apiError(res.statusCode ?? 0, await this.#readAll(res, what, both), what)
      if (err.status === 401) this.#conn.tokenRejected()
      throw err
    }
    call.onOpen?.()
    const lines = new LineSplitter(this.#s.maxEventBytes)
    await new Promise<void>((resolve, reject) => {
      let settled = false
      // The first outcome wins; destroying the response afterwards fires 'aborted' and 'error' too.
      const settle = (err?: unknown): void => {
        if (settled) return
        settled = true
        both.removeEventListener('abort', onAbort)
        if (call.signal.aborted) reject(call.signal.reason)
        else if (deadline.aborted) reject(new KubernetesStreamError(what, `the watch was still open ${call.deadlineMs} ms after it started (the server should end it at timeoutSeconds): cut as hung`))
        else if (err === undefined) resolve()
        else reject(err)
        res.destroy()
      }
      const onAbort = (): void => settle(new Error('aborted'))
      both.addEventListener('abort', onAbort, { once: true })
      res.on('data', (chunk: Buffer) => {
        if (settled) return
        try {
          for (const line of lines.push(chunk)) call.onLine(line)
        } catch (err) {
          settle(err instanceof LineTooLongError ? new KubernetesStreamError(what, `${err.message}: the watch was cut`) : err)
        }
      })
      res.on('end', () => settle())
      res.on('error', (err) => settle(new KubernetesStreamError(what, `the watch broke: ${err.message}`, { cause: err })))
      res.on('aborted', () => settle(new KubernetesStreamError(what, 'the watch broke (connection closed)')))
      res.on('close', () => settle(new KubernetesStreamError(what, 'the watch broke (connection closed)')))
    })
  }

  close (): void {
    this.#agent.destroy()
  }

  #open (path: string, what: string, signal: AbortSignal, headersTimeoutMs?: number, send: Send = {}): Promise<http.IncomingMessage> {
    const { server } = this.#conn
    const token = this.#conn.token()
    const mod = server.protocol === 'https:' ? https : http
    return new Promise((resolve, reject) => {
      if (signal.aborted) { reject(this.#aborted(signal, what)); return }
      const req = mod.request({
        host: server.hostname.replace(/^\[|\]$/g, ''),
        port: server.port === '' ? undefined : Number(server.port),
        path: `${server.pathname.replace(/\/$/, '')}${path}`,
        method: send.method ?? 'GET',
        agent: this.#agent,
        headers: {
          accept: send.accept ?? 'application/json',
          ...(send.body === undefined ? {} : { 'content-type': send.contentType ?? 'application/json', 'content-length': send.body.length }),
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
        },
        signal
      }, (res) => { clearTimeout(timer); resolve(res) })
      // Headers within the bound, also for a watch (its body may then stay quiet for minutes).
      const timer = headersTimeoutMs === undefined
        ? undefined
        : setTimeout(() => req.destroy(new KubernetesStreamError(what, `no answer within ${headersTimeoutMs} ms`)), headersTimeoutMs)
      timer?.unref()
      req.on('error', (err) => {
        clearTimeout(timer)
        reject(err instanceof KubernetesStreamError ? err : signal.aborted ? this.#aborted(signal, what) : new KubernetesStreamError(what, `cannot reach ${server.origin}: ${(err as NodeJS.ErrnoException).code ?? err.message}`, { cause: err }))
      })
      req.end(send.body)
    })
  }

  #readAll (res: http.IncomingMessage, what: string, signal: AbortSignal): Promise<string> {
    const max = this.#s.maxEventBytes * 4
    return new Promise((resolve, reject) => {
      const parts: Buffer[] = []
      let size = 0
      res.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > max) { res.destroy(); reject(new KubernetesStreamError(what, `an answer longer than ${max} bytes (4 \u00d7 maxEventBytes)`)); return }
        parts.push(chunk)
      })
      res.on('end', () => resolve(Buffer.concat(parts).toString('utf8')))
      res.on('error', (err) => reject(signal.aborted ? this.#aborted(signal, what) : new KubernetesStreamError(what, `the answer broke: ${err.message}`, { cause: err })))
      res.on('aborted', () => reject(new KubernetesStreamError(what, 'the answer broke (connection closed)')))
    })
  }

  #aborted (signal: AbortSignal, what: string): unknown {
    const reason: unknown = signal.reason
    if (reason instanceof Error && reason.name === 'TimeoutError') return new KubernetesStreamError(what, 'no answer in time', { cause: reason })
    return reason
  }
}
