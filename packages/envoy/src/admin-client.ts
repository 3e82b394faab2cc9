// Envoy admin API client over undici. Every failure becomes an EnvoyAdminError with a
// stable code and the URL it concerned; parsing is left to the pure parsers.
import { InvalidOptionError, isConnectFailure, isReset, networkErrorCode, redactError, redactText, redactUrl, sleep, silentLogger, systemClock, TimeoutError, type Clock, type Logger } from '@lameduck/core'
import type { Dispatcher } from 'undici'
import { CONNECTION_STATS_PATHS, countConnections, type ConnectionCount, type ConnectionCountMethod } from './count-connections.ts'
import { countRequests, REQUEST_STATS_PATH, type RequestCount, type RequestCountOptions } from './count-requests.ts'
import { ENVOY_ERROR_CODES, EnvoyAdminError } from './errors.ts'
import { adminUrl, CONNECTION_METHODS, duration, oneOf, ports, regexp, strings } from './options.ts'
import { parseReadyBody, type EnvoyServerState } from './server-state.ts'
import { waitForConnections, type WaitForConnectionsOptions, type WaitForConnectionsResult } from './wait-for-connections.ts'

// undici is loaded at the first admin request, not with the package: every app on the engine
// imports this module, most without a sidecar, and undici alone is ~5.5 MB of heap (more for each
// major GC to mark, in every process).
let undici: Promise<typeof import('undici')> | undefined
const loadUndici = (): Promise<typeof import('undici')> => (undici ??= import('undici'))

export interface ConnectionCountOptions {
  /** Which stats to read and how to sum them. Default: the client's `connections.method` ('istio'). */
  method?: ConnectionCountMethod
  /** istio/json: wildcard listener ports not to count. Default [15021, 15090]. */
  excludePorts?: readonly number[]
  /** contour: HCM stat prefixes not to count. Default Contour's own. */
  excludePrefixes?: readonly string[]
  /** Count only stats (istio/json: raw name; contour: HCM prefix) matching this. */
  include?: RegExp
  /** istio/json: when one of these listener stat addresses is present, count only those (e.g. ISTIO_INBOUND_LISTENERS). Default none. */
  inboundListeners?: readonly string[]
  signal?: AbortSignal
}

export interface EnvoyAdminOptions {
  /** Admin base URL. Default 'http://127.0.0.1:15000' (Istio's proxyAdminPort). */
  url?: string | URL
  /** Connect to the admin API over this unix socket (Contour's /admin/admin.sock); `url` then only names the host. */
  socketPath?: string
  /** Bound on each admin request, headers and body. Default 2000 (Istio's stats timeout). */
  timeoutMs?: number
  /** Defaults for activeConnections() and waitForConnections(). */
  connections?: Omit<ConnectionCountOptions, 'signal'>
  /** Use this undici dispatcher instead of a private Agent. */
  dispatcher?: Dispatcher
  logger?: Logger
}

export interface DrainListenersOptions {
  /** Only listeners with traffic_direction INBOUND (`inboundonly`). Default false. */
  inboundOnly?: boolean
  /** Keep accepting for --drain-time-s, then stop the listeners (`graceful`). Default true. */
  graceful?: boolean
  /** Never stop the listeners (`skip_exit`); the process never exits from a drain either way. Default false. */
  skipExit?: boolean
  signal?: AbortSignal
}

export interface WaitReadyOptions {
  /** Default 60 000 (pilot-agent wait). */
  timeoutMs?: number
  /** Default 500. */
  intervalMs?: number
  signal?: AbortSignal
  clock?: Clock
}

export interface AdminResponse {
  statusCode: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** The parts of /server_info lameduck reads; everything else is passed through. */
export interface ServerInfo {
  state: EnvoyServerState | string
  version?: string
  command_line_options?: { drain_time?: string, drain_strategy?: string, [key: string]: unknown }
  [key: string]: unknown
}

const MAX_BODY_BYTES = 32 * 1024 * 1024

export class EnvoyAdmin {
  /** The admin base URL as it may be shown (messages, logs, describe()): userinfo redacted. */
  readonly url: string
  readonly timeoutMs: number
  readonly connections: Omit<ConnectionCountOptions, 'signal'> & { method: ConnectionCountMethod }
  /** The app's dispatcher, or this client's own Agent once the first request made it. */
  #dispatcher: Dispatcher | null
  #ownDispatcher: boolean
  #socketPath: string | undefined
  #closed = false
  #log: Logger
  /** Where requests go: the URL without userinfo, which undici would drop silently. */
  #target: string
  /** `authorization: Basic` from the URL's userinfo (an admin port behind an authenticating proxy). */
  #headers: Record<string, string>

  constructor (options: EnvoyAdminOptions = {}) {
    const base = adminUrl('envoyAdmin.url', options.url)
    const target = new URL(base)
    this.#headers = basicAuth(target)
    target.username = ''
    target.password = ''
    this.#target = target.href.replace(/\/+$/, '')
    this.url = redactUrl(base)
    this.timeoutMs = duration('envoyAdmin.timeoutMs', options.timeoutMs, 2000, { positive: true })
    const c = options.connections ?? {}
    this.connections = {
      method: oneOf('envoyAdmin.connections.method', c.method, CONNECTION_METHODS, 'istio'),
      excludePorts: ports('envoyAdmin.connections.excludePorts', c.excludePorts),
      excludePrefixes: strings('envoyAdmin.connections.excludePrefixes', c.excludePrefixes),
      include: regexp('envoyAdmin.connections.include', c.include),
      inboundListeners: strings('envoyAdmin.connections.inboundListeners', c.inboundListeners)
    }
    this.#ownDispatcher = options.dispatcher === undefined
    this.#dispatcher = options.dispatcher ?? null
    this.#socketPath = options.socketPath
    this.#log = options.logger ?? silentLogger
  }

  /**
   * One admin request. Resolves for the statuses in `ok` (default 2xx); anything else,
   * and every transport failure, rejects with an EnvoyAdminError. An aborted `signal`
   * rejects with its reason, unwrapped.
   */
  async request (method: string, path: string, options: { signal?: AbortSignal, timeoutMs?: number, ok?: (status: number) => boolean } = {}): Promise<AdminResponse> {
    const url = this.url + path
    const details = { url, method }
    const timeout = AbortSignal.timeout(Math.max(1, options.timeoutMs ?? this.timeoutMs))
    const signal = options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout])
    const started = Date.now()
    let statusCode: number
    let headers: AdminResponse['headers']
    let body: string
    try {
      if (this.#closed) throw new EnvoyAdminError(ENVOY_ERROR_CODES.RESPONSE, 'Envoy admin request failed: this client is closed', details)
      const { Agent, request } = await loadUndici()
      this.#dispatcher ??= new Agent({ keepAliveTimeout: 4000, connections: 2, ...(this.#socketPath !== undefined ? { connect: { socketPath: this.#socketPath } } : {}) })
      const res = await request(this.#target + path, { method: method as Dispatcher.HttpMethod, headers: this.#headers, dispatcher: this.#dispatcher, signal })
      statusCode = res.statusCode
      headers = res.headers
      body = await readCapped(res.body, details)
    } catch (err) {
      if (options.signal?.aborted) throw options.signal.reason
      if (err instanceof EnvoyAdminError) throw err
      redactError(err) // kept as the cause
      if (timeout.aborted) {
        throw new EnvoyAdminError(ENVOY_ERROR_CODES.TIMEOUT, `Envoy admin did not answer within ${options.timeoutMs ?? this.timeoutMs} ms`, details, { cause: err })
      }
      const code = networkErrorCode(err)
      const message = redactText(err instanceof Error ? err.message : String(err))
      // Never reached, or gone mid-request: Envoy (and its connections) is not there.
      if (isConnectFailure(err) || isReset(err)) {
        throw new EnvoyAdminError(ENVOY_ERROR_CODES.UNREACHABLE, `Envoy admin unreachable: ${message.includes(code) ? message : `${code} ${message}`}`, details, { cause: err })
      }
      // Not HTTP on the other end (parser errors) or an undici misuse.
      throw new EnvoyAdminError(ENVOY_ERROR_CODES.RESPONSE, `Envoy admin request failed: ${code !== '' ? `${code} ` : ''}${message}`, details, { cause: err })
    }
    this.#log.debug({ envoy: { method, url, statusCode, ms: Date.now() - started } }, 'envoy admin request')
    const ok = options.ok ?? ((s: number) => s >= 200 && s < 300)
    if (!ok(statusCode)) {
      const snippet = redactText(body.slice(0, 512))
      const withStatus = { ...details, statusCode, body: snippet }
      const shown = snippet.trim().split('\n')[0]?.slice(0, 120) ?? ''
      if (statusCode === 405) {
        throw new EnvoyAdminError(ENVOY_ERROR_CODES.METHOD, `Envoy admin refused the method: 405 ${shown}`, withStatus)
      }
      const hint = statusCode === 404 ? ' (is the URL Envoy\'s admin port?)' : ''
      throw new EnvoyAdminError(ENVOY_ERROR_CODES.STATUS, `Envoy admin answered ${statusCode}${shown !== '' ? `: ${shown}` : ''}${hint}`, withStatus)
    }
    return { statusCode, headers, body }
  }

  /** The server state from `/ready` (200 LIVE, 503 otherwise). */
  async ready (options: { signal?: AbortSignal, timeoutMs?: number } = {}): Promise<EnvoyServerState> {
    const res = await this.request('GET', '/ready', { ...options, ok: (s) => s === 200 || s === 503 })
    const state = parseReadyBody(res.body)
    if (state === null) {
      const code = res.statusCode === 200 ? ENVOY_ERROR_CODES.RESPONSE : ENVOY_ERROR_CODES.STATUS
      throw new EnvoyAdminError(code, `Envoy admin /ready answered ${res.statusCode} with an unknown state '${res.body.trim().slice(0, 60)}'`, { url: this.url + '/ready', method: 'GET', statusCode: res.statusCode, body: res.body.slice(0, 512) })
    }
    return state
  }

  /** Polls `/ready` until LIVE. Rejects with a TimeoutError naming the admin URL and the last answer. */
  async waitReady (options: WaitReadyOptions = {}): Promise<void> {
    const timeoutMs = duration('timeoutMs', options.timeoutMs, 60_000)
    const intervalMs = duration('intervalMs', options.intervalMs, 500, { positive: true })
    const clock = options.clock ?? systemClock
    const { signal } = options
    const deadline = clock.now() + timeoutMs
    let last = 'no answer yet'
    let lastErr: unknown
    for (;;) {
      signal?.throwIfAborted()
      try {
        // Bounded by what is left, but never so short that a healthy Envoy could not answer.
        const state = await this.ready({ signal, timeoutMs: Math.min(this.timeoutMs, Math.max(250, deadline - clock.now())) })
        if (state === 'LIVE') return
        last = `state ${state}`
        lastErr = undefined
      } catch (err) {
        if (signal?.aborted) throw signal.reason
        last = err instanceof Error ? err.message : String(err)
        lastErr = err
      }
      const now = clock.now()
      if (now >= deadline) {
        throw new TimeoutError(`waiting for Envoy at ${this.url} to report LIVE on /ready (last: ${last})`, timeoutMs, { cause: lastErr })
      }
      this.#log.debug({ envoy: { url: this.url, last } }, 'envoy not ready yet')
      await sleep(clock, Math.min(intervalMs, deadline - now), signal)
    }
  }

  async serverInfo (options: { signal?: AbortSignal } = {}): Promise<ServerInfo> {
    const res = await this.request('GET', '/server_info', options)
    let doc: unknown
    try { doc = JSON.parse(res.body) } catch { doc = null }
    if (typeof doc !== 'object' || doc === null || typeof (doc as ServerInfo).state !== 'string') {
      throw new EnvoyAdminError(ENVOY_ERROR_CODES.RESPONSE, 'Envoy admin /server_info is not ServerInfo JSON', { url: this.url + '/server_info', method: 'GET', statusCode: res.statusCode, body: res.body.slice(0, 512) })
    }
    return doc as ServerInfo
  }

  /** `POST /healthcheck/fail`: /ready turns 503 DRAINING and every HTTP/1.1 response gets `connection: close`. */
  async failHealthcheck (options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.request('POST', '/healthcheck/fail', options)
  }

  /** `POST /healthcheck/ok`: undoes /healthcheck/fail (not a drain_listeners). */
  async okHealthcheck (options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.request('POST', '/healthcheck/ok', options)
  }

  /** `POST /drain_listeners` with presence-only flags, in Istio's order. */
  async drainListeners (options: DrainListenersOptions = {}): Promise<void> {
    await this.request('POST', drainListenersPath(options), { signal: options.signal })
  }

  /** `POST /quitquitquit`: Envoy exits at once, without a drain period. */
  async quit (options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.request('POST', '/quitquitquit', options)
  }

  /** Active downstream connections and, when -1, why. Transport and status errors reject. */
  async connectionCount (options: ConnectionCountOptions = {}): Promise<ConnectionCount> {
    const o = { ...this.connections, ...definedOnly(options) }
    const res = await this.request('GET', CONNECTION_STATS_PATHS[o.method], { signal: options.signal })
    return countConnections(o.method, res.body, o)
  }

  /** Requests in flight and received on the app's HCMs (`http.*.downstream_rq_active|total`); -1s when the stats lack them. */
  async requestCount (options: RequestCountOptions & { signal?: AbortSignal } = {}): Promise<RequestCount> {
    const res = await this.request('GET', REQUEST_STATS_PATH, { signal: options.signal })
    return countRequests(res.body, options)
  }

  /** Active downstream connections, -1 when the stats do not carry them. */
  async activeConnections (options: ConnectionCountOptions = {}): Promise<number> {
    return (await this.connectionCount(options)).count
  }

  /** Polls until at most `max` connections remain (after `minDrainMs`) or the deadline. Never rejects on Envoy errors. */
  waitForConnections (options: WaitForConnectionsOptions = {}): Promise<WaitForConnectionsResult> {
    return waitForConnections(this, options)
  }

  async close (): Promise<void> {
    if (!this.#ownDispatcher) return
    this.#closed = true
    await this.#dispatcher?.close()
  }
}

export function envoyAdmin (options: EnvoyAdminOptions = {}): EnvoyAdmin {
  return new EnvoyAdmin(options)
}

export function drainListenersPath ({ inboundOnly = false, graceful = true, skipExit = false }: DrainListenersOptions = {}): string {
  const flags = [inboundOnly && 'inboundonly', graceful && 'graceful', skipExit && 'skip_exit'].filter(Boolean)
  return flags.length === 0 ? '/drain_listeners' : `/drain_listeners?${flags.join('&')}`
}

function definedOnly<T extends object> (o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([k, v]) => v !== undefined && k !== 'signal')) as Partial<T>
}

/** `authorization: Basic` from a URL's userinfo, none without. */
function basicAuth (url: URL): Record<string, string> {
  if (url.username === '' && url.password === '') return {}
  let user: string
  let password: string
  try {
    user = decodeURIComponent(url.username)
    password = decodeURIComponent(url.password)
  } catch {
    throw new InvalidOptionError('envoyAdmin.url', `its user and password are not valid percent-encoding (in '${redactUrl(url)}'); encode them with encodeURIComponent`)
  }
  return { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` }
}

async function readCapped (body: AsyncIterable<Buffer> & { destroy?: (err?: Error) => unknown }, details: { url: string, method: string }): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.length
    if (size > MAX_BODY_BYTES) {
      body.destroy?.()
      throw new EnvoyAdminError(ENVOY_ERROR_CODES.RESPONSE, `Envoy admin response larger than ${MAX_BODY_BYTES} bytes`, details)
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}
