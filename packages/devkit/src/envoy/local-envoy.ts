// A local stand-in for an Envoy sidecar: the data-plane proxy in front of the app, and an
// admin API with Envoy's state model (init manager state + health-check flag), drain
// manager and stats. See the package README for what is faithful and what is left out.
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { Logger } from '@lameduck/core'
import { SERVER_STATE_GAUGE, type EnvoyServerState } from '@lameduck/envoy'
import { handleAdmin, type AdminReply, type AdminTarget } from './admin-api.ts'
import { DrainManager, type DrainDirection } from './drain-manager.ts'
import { resolveEnvoyOptions, type EnvoyOptions, type ResolvedEnvoyOptions } from './options.ts'
import { appendAccessLog, type AccessLogEntry } from './access-log.ts'
import { ProxyListener, type ProxyHost } from './proxy-listener.ts'
import { adminStats, istioStatsMatcher, StatStore, type Stat } from './stats-store.ts'

export interface AdminLogEntry { method: string, url: string, status: number, at: number }

export interface LocalEnvoy {
  /** The data-plane listener: send app traffic here. */
  readonly url: string
  readonly adminUrl: string
  readonly port: number
  readonly adminPort: number
  readonly options: ResolvedEnvoyOptions
  /** What `/ready` says. */
  readonly state: EnvoyServerState
  /** Whether the listener still accepts connections (false once drained listeners stop). */
  readonly accepting: boolean
  /** Downstream connections open on the (inbound) listener now. */
  readonly connections: number
  /** The outbound listener, when `outbound` is set: the app sends its own upstream calls here. */
  readonly outboundUrl: string | null
  /** Connections open on the outbound listener now (0 without one). */
  readonly outboundConnections: number
  /** Envoy's access log for proxied requests (newest 10 000): status, response flags, details, tries. */
  readonly accessLog: readonly AccessLogEntry[]
  /** Every admin request, in order, for tests. */
  readonly adminLog: readonly AdminLogEntry[]
  /** Current value of a raw stat, e.g. 'listener_manager.listener_stopped'. */
  stat(name: string): number | undefined
  /** Ends initialization now (for initializeDelayMs tests). */
  initialize(): void
  /** Resolves once closed, by close() or `POST /quitquitquit`. */
  readonly closed: Promise<void>
  close(): Promise<void>
}

type InitState = 'uninitialized' | 'initializing' | 'initialized'

class LocalEnvoyServer implements LocalEnvoy, AdminTarget {
  readonly options: ResolvedEnvoyOptions
  readonly store: StatStore
  readonly adminLog: AdminLogEntry[] = []
  readonly accessLog: AccessLogEntry[] = []
  readonly closed: Promise<void>
  readonly promBlankLineBetweenFamilies: boolean
  #drain: DrainManager
  #proxy: ProxyListener
  #outbound: ProxyListener | null
  #admin: Server
  #adminSockets = new Set<Socket>()
  #init: InitState = 'uninitialized'
  #hcFailed = false
  #adminPort = 0
  #startedAt = Date.now()
  #timers: NodeJS.Timeout[] = []
  #closing: Promise<void> | null = null
  #resolveClosed!: () => void
  #log: Logger
  #s: Record<'live' | 'state' | 'totalConnections' | 'uptime' | 'workersStarted' | 'listenerStopped' | 'ldsSuccess' | 'cdsSuccess', Stat>

  constructor (options: ResolvedEnvoyOptions) {
    this.options = options
    this.promBlankLineBetweenFamilies = options.promBlankLineBetweenFamilies
    this.#log = options.logger
    this.closed = new Promise((resolve) => { this.#resolveClosed = resolve })
    this.#drain = new DrainManager({
      drainTimeMs: options.drainTimeMs,
      strategy: options.drainStrategy,
      perDirectionDrain: options.perDirectionDrain,
      random: options.random,
      now: Date.now
    })
    this.store = new StatStore(options.istio === false ? undefined : istioStatsMatcher(options.istio.exitOnZeroActiveConnections, options.istio.statsInclusionSuffixes))
    const host: ProxyHost = { options, store: this.store, drain: this.#drain, healthCheckFailed: () => this.#hcFailed, log: (e) => appendAccessLog(this.accessLog, e) }
    this.#proxy = inboundListener(host, options)
    this.#outbound = outboundListener(host, options)
    const st = this.store
    this.#s = serverStats(st)
    st.gauge('server.version').set(0)
    st.gauge('server.concurrency').set(options.concurrency)
    st.gauge('listener_manager.total_listeners_active').set(this.#outbound === null ? 1 : 2)
    this.#admin = this.#adminServer(adminStats(st))
  }

  /** The admin API's HTTP server, counting its own connections and requests as Envoy does. */
  #adminServer (admin: ReturnType<typeof adminStats>): Server {
    const server = createServer((req, res) => {
      const method = req.method ?? 'GET'
      const url = req.url ?? '/'
      admin.rqTotal.inc()
      const reply: AdminReply & { after?: () => void } = handleAdmin(this, method, url)
      this.adminLog.push({ method, url, status: reply.status, at: Date.now() })
      res.writeHead(reply.status, {
        'content-type': reply.contentType ?? 'text/plain; charset=UTF-8',
        'cache-control': 'no-cache, max-age=0',
        'x-content-type-options': 'nosniff',
        'content-length': Buffer.byteLength(reply.body)
      })
      res.end(reply.body)
      if (reply.after !== undefined) res.once('finish', reply.after)
    })
    server.on('connection', (socket) => {
      this.#adminSockets.add(socket)
      for (const s of [admin.cxActive, admin.mainThreadCxActive, admin.httpCxActive, admin.cxTotal]) s.inc()
      socket.once('close', () => {
        this.#adminSockets.delete(socket)
        for (const s of [admin.cxActive, admin.mainThreadCxActive, admin.httpCxActive]) s.dec()
      })
    })
    return server
  }

  get url (): string { return `http://${hostForUrl(this.options.host)}:${this.#proxy.port}` }
  get adminUrl (): string { return `http://${hostForUrl(this.options.adminHost)}:${this.adminPort}` }
  get port (): number { return this.#proxy.port }
  get adminPort (): number { return this.#adminPort }
  get accepting (): boolean { return this.#proxy.accepting }
  get connections (): number { return this.#proxy.connections }
  get outboundUrl (): string | null { return this.#outbound === null ? null : `http://${hostForUrl(this.options.host)}:${this.#outbound.port}` }
  get outboundConnections (): number { return this.#outbound?.connections ?? 0 }
  #listeners (): ProxyListener[] { return this.#outbound === null ? [this.#proxy] : [this.#proxy, this.#outbound] }

  get state (): EnvoyServerState { return this.serverState() }

  /** Utility::serverState: init manager state first, then the health-check flag. */
  serverState (): EnvoyServerState {
    if (this.#init === 'uninitialized') return 'PRE_INITIALIZING'
    if (this.#init === 'initializing') return 'INITIALIZING'
    return this.#hcFailed ? 'DRAINING' : 'LIVE'
  }

  stat (name: string): number | undefined { return this.store.get(name)?.value }

  async start (): Promise<void> {
    for (const l of this.#listeners()) await l.listen()
    await new Promise<void>((resolve, reject) => {
      this.#admin.once('error', reject)
      this.#admin.listen(this.options.admin, this.options.adminHost, () => { this.#admin.off('error', reject); resolve() })
    })
    this.#adminPort = (this.#admin.address() as AddressInfo).port
    const { preInitializeDelayMs, initializeDelayMs } = this.options
    const beginInit = (): void => {
      if (this.#init !== 'uninitialized') return
      this.#init = 'initializing'
      if (initializeDelayMs === 0) this.initialize()
      else this.#later(() => this.initialize(), initializeDelayMs)
    }
    if (preInitializeDelayMs === 0) beginInit()
    else this.#later(beginInit, preInitializeDelayMs)
    this.#flush()
    const flush = setInterval(() => this.#flush(), this.options.statsFlushIntervalMs)
    flush.unref()
    this.#timers.push(flush)
    this.#log.info({ envoy: { url: this.url, adminUrl: this.adminUrl, upstream: this.options.upstream.href } }, 'envoy: listening')
  }

  initialize (): void {
    if (this.#init === 'initialized' || this.#closing !== null) return
    this.#init = 'initialized'
    this.#s.ldsSuccess.inc()
    this.#s.cdsSuccess.inc()
    this.#s.workersStarted.set(1)
    this.#s.live.set(this.#hcFailed ? 0 : 1)
    for (const l of this.#listeners()) l.startWorkers()
    this.#log.info({ envoy: { state: this.serverState() } }, 'envoy: initialized, workers started')
  }

  /** `server.state` and `server.total_connections` change only here, as on Envoy's stats flush. */
  #flush (): void {
    this.#s.state.set(SERVER_STATE_GAUGE[this.serverState()])
    this.#s.totalConnections.set(this.connections + this.outboundConnections)
    this.#s.uptime.set(Math.floor((Date.now() - this.#startedAt) / 1000))
  }

  setHealthCheckFailed (failed: boolean): void {
    this.#hcFailed = failed
    if (this.#init === 'initialized') this.#s.live.set(failed ? 0 : 1) // immediately, unlike server.state
    this.#log.info({ envoy: { healthCheckFailed: failed } }, `envoy: health checks ${failed ? 'failing' : 'passing'}`)
  }

  drainListeners ({ inboundOnly, graceful, skipExit }: { inboundOnly: boolean, graceful: boolean, skipExit: boolean }): AdminReply {
    if (skipExit && !graceful && !this.options.nonGracefulDrainNotifies) return { status: 400, body: 'skip_exit requires graceful\n' }
    const direction: DrainDirection = inboundOnly ? 'inbound' : 'all'
    if (graceful) {
      // Repeated graceful drains join the running sequence.
      if (!this.#drain.draining(direction)) {
        this.#drain.start(direction, () => { if (!skipExit) this.#stopListeners(direction) })
        this.#log.info({ envoy: { direction, skipExit, drainTimeMs: this.options.drainTimeMs } }, 'envoy: graceful drain started')
      }
    } else {
      if (this.options.nonGracefulDrainNotifies && !this.#drain.draining(direction)) this.#drain.start(direction, () => {})
      if (!skipExit) this.#stopListeners(direction)
    }
    return { status: 200, body: 'OK\n' }
  }

  #stopListeners (direction: DrainDirection): void {
    for (const l of this.#listeners()) {
      if (direction === 'inbound' && l.config.direction !== 'inbound') continue
      if (!l.stop()) continue
      this.#s.listenerStopped.inc()
      this.#log.info({ envoy: { direction } }, 'envoy: listeners stopped')
    }
  }

  listeners (): Array<{ name: string, address: string, port: number }> {
    return this.#listeners().map((l) => ({ name: l.config.name, address: l.config.host, port: l.port }))
  }

  serverInfo (): object {
    const uptime = `${Math.floor((Date.now() - this.#startedAt) / 1000)}s`
    return {
      version: '0000000000000000000000000000000000000000/1.40.0/Clean/RELEASE/BoringSSL (lameduck-devkit)',
      state: this.serverState(),
      hot_restart_version: 'disabled',
      command_line_options: {
        base_id: '0',
        concurrency: this.options.concurrency,
        config_path: '',
        config_yaml: '',
        admin_address_path: '',
        local_address_ip_version: 'v4',
        log_level: 'info',
        mode: 'Serve',
        disable_hot_restart: true,
        restart_epoch: 0,
        drain_time: protoDuration(this.options.drainTimeMs),
        drain_strategy: this.options.drainStrategy === 'immediate' ? 'Immediate' : 'Gradual',
        parent_shutdown_time: '900s'
      },
      uptime_current_epoch: uptime,
      uptime_all_epochs: uptime,
      node: { id: 'lameduck-devkit', cluster: 'lameduck-devkit', user_agent_name: 'envoy', metadata: {} }
    }
  }

  quit (): void {
    this.#log.info({}, 'envoy: /quitquitquit, exiting without a drain')
    this.close().catch((err: unknown) => this.#log.error({ err }, 'envoy: close failed'))
  }

  close (): Promise<void> {
    this.#closing ??= (async () => {
      for (const t of this.#timers) clearTimeout(t)
      this.#drain.close()
      for (const l of this.#listeners()) await l.close()
      for (const socket of this.#adminSockets) socket.destroy()
      await new Promise<void>((resolve) => this.#admin.close(() => resolve()))
      this.#resolveClosed()
    })()
    return this.#closing
  }

  #later (fn: () => void, ms: number): void {
    const t = setTimeout(fn, ms)
    t.unref()
    this.#timers.push(t)
  }
}

function hostForUrl (host: string): string {
  return host.includes(':') ? `[${host}]` : host
}

/** Protobuf JSON duration: "45s", "0.500s". */
function protoDuration (ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(3)}s`
}

/** Starts a local Envoy: listener + admin API. Resolves once both listen. */
export async function startEnvoy (options: EnvoyOptions): Promise<LocalEnvoy> {
  const envoy = new LocalEnvoyServer(resolveEnvoyOptions(options))
  try {
    await envoy.start()
  } catch (err) {
    await envoy.close()
    throw err
  }
  return envoy
}

function inboundListener (host: ProxyHost, options: ResolvedEnvoyOptions): ProxyListener {
  const istio = options.istio !== false
  return new ProxyListener(host, {
    name: istio ? 'virtualInbound' : options.listenerName,
    upstream: options.upstream,
    port: options.listen,
    host: options.host,
    direction: options.trafficDirection,
    statPrefix: options.statPrefix,
    statAddress: istio ? '0.0.0.0_15006' : undefined
  })
}

function outboundListener (host: ProxyHost, options: ResolvedEnvoyOptions): ProxyListener | null {
  if (options.outbound === null) return null
  return new ProxyListener(host, {
    name: 'virtualOutbound',
    upstream: options.outbound,
    port: options.outboundListen,
    host: options.host,
    direction: 'outbound',
    statPrefix: 'outbound_http',
    statAddress: options.istio !== false ? '0.0.0.0_15001' : undefined
  })
}

function serverStats (st: StatStore): Record<'live' | 'state' | 'totalConnections' | 'uptime' | 'workersStarted' | 'listenerStopped' | 'ldsSuccess' | 'cdsSuccess', Stat> {
  return {
    live: st.gauge('server.live'),
    state: st.gauge('server.state'),
    totalConnections: st.gauge('server.total_connections'),
    uptime: st.gauge('server.uptime'),
    workersStarted: st.gauge('listener_manager.workers_started'),
    listenerStopped: st.counter('listener_manager.listener_stopped'),
    ldsSuccess: st.counter('listener_manager.lds.update_success'),
    cdsSuccess: st.counter('cluster_manager.cds.update_success')
  }
}
