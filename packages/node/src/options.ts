import { isIP } from 'node:net'
import { isLoopback } from './host.ts'
import { resolveSidecar } from './sidecar.ts'
import { constants } from 'node:os'
import type { EnvoySidecarOptions } from '@lameduck/envoy'
import { DEFAULT_ADMIN_PORT, InvalidOptionError, SHUTDOWN_DEFAULTS, assertDuration, defaultShutdownTimeoutMs, propagationWindow, type DrainStep, type Logger, type PropagationWindow, type ReadinessCheck, type Registry, type StartupStep, type WindowsInput } from '@lameduck/core'

export interface AdminOptions {
  /** Interface the admin listener binds. Default '127.0.0.1'. A non-loopback host requires `token`. */
  host?: string
  /**
   * Default 54199 (the port EDAS made familiar). 0 or 'auto': a free port of
   * this process's own, e.g. one per worker when several share a pod (see
   * clusterAdmin() for one admin API in a cluster primary).
   */
  port?: number | 'auto'
  /** Bearer token required on every admin request when set: printable ASCII, at least 8 characters. */
  token?: string
}

/** A prom-client Registry (or anything with its registerMetric()). */
export interface PromRegistryLike { registerMetric(metric: unknown): void, getSingleMetric(name: string): unknown }

export interface MetricsOptions {
  /**
   * Where `path` is served: 'admin' (default, behind the admin token), 'app'
   * (the application port, read-only and without a token, for Prometheus to
   * scrape; nothing else of the admin API is there), or false.
   */
  listener?: 'app' | 'admin' | false
  /** Default '/metrics'. */
  path?: string
  /** A prom-client Registry to register lameduck's metrics into (e.g. prom-client's default `register`). */
  registry?: PromRegistryLike
}

/**
 * Envoy sidecar coordination: @lameduck/envoy's envoySidecar() options with a
 * required `envoyAdmin` URL (waitReady, readyTimeoutMs, drain, maxOpenConnections,
 * drainTimeoutMs, inboundOnly, minDrainMs, checkIntervalMs, connections, ...).
 */
export type SidecarOptions = Omit<EnvoySidecarOptions, 'envoyAdmin'> & { envoyAdmin: string }

/**
 * Sidecar coordination as lifecycle steps (e.g. an `envoySidecar()` you built,
 * or your own): run before registering and after the window; `close` at the end.
 * `drainTimeoutMs` (default 0) is added to the default shutdownTimeoutMs.
 */
export interface SidecarSteps {
  beforeRegister?: StartupStep[]
  afterWindow?: DrainStep[]
  close?(): Promise<void>
  drainTimeoutMs?: number
}

export interface LameduckOptions {
  /** Registry app / service name (required). */
  service: string
  /** Advertised address. Default: POD_IP, else the first non-loopback IPv4. */
  host?: string
  /** Advertised port. Default: the port the app listens on. */
  port?: number
  /** Instance id in the registry. Default `${host}:${service}:${port}`. */
  instanceId?: string
  /** Extra metadata published with the instance. */
  metadata?: Record<string, string>
  /** eurekaRegistry(), nacosRegistry(), memoryRegistry(); omit for none (Kubernetes Service only). */
  registry?: Registry
  /** ms to wait after listen before readiness checks start. Default 0. */
  delayMs?: number
  /** @deprecated since 0.2: use `delayMs` (same meaning); removed in the next minor version. */
  delay?: number
  /** All must pass before registering and before /health/ready is 200. */
  readiness?: ReadinessCheck[]
  /** Startup fails (and /health/live turns 503) if readiness has not passed by then. Default 60 000. */
  readinessTimeoutMs?: number
  /** Warmup published as metadata, ms. Default 120 000. */
  warmupMs?: number
  /** @deprecated since 0.2: use `warmupMs` (same meaning); removed in the next minor version. */
  warmup?: number
  /** Weight published as metadata. Default 100. */
  weight?: number
  /** Propagation window: preset or parts. Default: the registry's suggestion, else 'kubernetes'. */
  windows?: WindowsInput
  /** Longest request the service serves; bounds the in-flight wait. Default 30 000. */
  maxRequestMs?: number
  /** Envoy sidecar coordination: envoySidecar() options, or a steps object. */
  sidecar?: SidecarOptions | SidecarSteps | false
  /** Admin listener; false disables it. */
  admin?: AdminOptions | false
  /** Signals that run the offline sequence and then close. Default ['SIGTERM', 'SIGINT']; [] or false disables. */
  signals?: NodeJS.Signals[] | false
  /** Bound on the whole signal-driven shutdown. Default: window + maxRequestMs + sidecar drain + 5 s. */
  shutdownTimeoutMs?: number
  /** End draining early once every consumer was told (all lameduck-aware). Default false. */
  earlyOffline?: boolean | { quietMs?: number }
  /** Paths of the probe routes on the app listener; false to not add them. */
  routes?: { ready?: string, live?: string } | false
  /** The Prometheus metrics: where they are served, and an optional prom-client registry. */
  metrics?: MetricsOptions | false
}

/** What attach() takes: the lifecycle options plus how to fit the engine into the app. */
export interface AttachOptions extends LameduckOptions {
  /** pino-compatible logger (a Fastify app.log fits). Default: JSON lines on stderr, info and up. */
  logger?: Logger
  /** Answer the probe routes at the raw request level. Default true; false when the framework serves them (see handle.probe()). */
  serveRoutes?: boolean
  /** How shutdown() and the signal path close the app once drained. Default: close the server and its connections. */
  closeApp?: () => Promise<void>
  /** Ends the process after the signal path: 0 after a clean close, 1 when forced. Default: exit with that code. */
  terminate?: (code: 0 | 1) => void
}

export interface ResolvedOptions {
  service: string
  host: string | undefined
  port: number | undefined
  instanceId: string | undefined
  metadata: Record<string, string>
  registry: Registry | undefined
  delayMs: number
  readiness: ReadinessCheck[]
  readinessTimeoutMs: number
  warmupMs: number
  /** Deprecated option names that were used, with the message to log once. */
  deprecations: string[]
  weight: number
  window: PropagationWindow
  maxRequestMs: number
  sidecar: ResolvedSidecar | false
  admin: { host: string, port: number | 'auto', token: string | undefined } | false
  signals: NodeJS.Signals[]
  shutdownTimeoutMs: number
  earlyOffline: { quietMs: number } | false
  routes: { ready: string, live: string } | false
  metrics: ResolvedMetrics
  logger: Logger | undefined
  serveRoutes: boolean
  closeApp: (() => Promise<void>) | undefined
  terminate: ((code: 0 | 1) => void) | undefined
}

/** The sidecar as steps, whichever way it was given. */
export interface ResolvedSidecar {
  beforeRegister: StartupStep[]
  afterWindow: DrainStep[]
  close(): Promise<void>
  drainTimeoutMs: number
}

export interface ResolvedMetrics { listener: 'app' | 'admin' | false, path: string, registry: PromRegistryLike | undefined }

const KNOWN = new Set(['service', 'host', 'port', 'instanceId', 'metadata', 'registry', 'delayMs', 'delay', 'readiness', 'readinessTimeoutMs', 'warmupMs', 'warmup', 'weight', 'windows', 'maxRequestMs', 'sidecar', 'admin', 'signals', 'shutdownTimeoutMs', 'earlyOffline', 'routes', 'metrics', 'logger', 'serveRoutes', 'closeApp', 'terminate'])

export function type (v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  return typeof v === 'string' ? `'${v}'` : typeof v
}

// Printable ASCII, no whitespace at either end: what survives an `authorization` header unchanged.
const TOKEN = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/

function port (name: string, v: unknown, allowZero: boolean): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < (allowZero ? 0 : 1) || v > 65535) {
    throw new InvalidOptionError(name, `must be an integer port ${allowZero ? '0' : '1'}–65535, got ${type(v)}`)
  }
  return v
}

/** Validates the plugin options once, at register time. Every error names the option and the fix. */
export function resolveOptions (input: AttachOptions, suggestedWindows?: WindowsInput): ResolvedOptions {
  if (typeof input !== 'object' || input === null) throw new InvalidOptionError('options', `expected an object, got ${type(input)}`)
  for (const key of Object.keys(input)) {
    if (!KNOWN.has(key)) throw new InvalidOptionError(key, `unknown option; known options are ${[...KNOWN].join(', ')}`)
  }
  const o = input
  if (typeof o.service !== 'string' || o.service.trim() === '') throw new InvalidOptionError('service', `required: the registry app / service name, e.g. service: 'orders' (got ${type(o.service)})`)
  if (o.host !== undefined && (typeof o.host !== 'string' || o.host === '')) throw new InvalidOptionError('host', `must be the address consumers reach this instance at, e.g. process.env.POD_IP (got ${type(o.host)})`)
  if (o.port !== undefined) port('port', o.port, false)
  if (o.instanceId !== undefined && (typeof o.instanceId !== 'string' || o.instanceId === '')) throw new InvalidOptionError('instanceId', `must be a non-empty string (got ${type(o.instanceId)})`)
  if (o.metadata !== undefined) {
    if (typeof o.metadata !== 'object' || o.metadata === null || Array.isArray(o.metadata)) throw new InvalidOptionError('metadata', `must be an object of strings (got ${type(o.metadata)})`)
    for (const [k, v] of Object.entries(o.metadata)) if (typeof v !== 'string') throw new InvalidOptionError(`metadata.${k}`, `must be a string (got ${type(v)})`)
  }
  const duration = (name: keyof LameduckOptions, fallback: number): number => {
    const v = o[name] ?? fallback
    assertDuration(name, v)
    return v
  }
  const deprecations: string[] = []
  const renamed = (old: 'delay' | 'warmup', name: 'delayMs' | 'warmupMs', fallback: number): number => {
    if (o[old] === undefined) return duration(name, fallback)
    if (o[name] !== undefined) throw new InvalidOptionError(old, `is the deprecated name of ${name}: give only ${name}`)
    deprecations.push(`lameduck: the option '${old}' is deprecated, use '${name}' (same value, in ms); '${old}' goes in the next minor version`)
    return duration(old, fallback)
  }
  const delayMs = renamed('delay', 'delayMs', 0)
  const readinessTimeoutMs = duration('readinessTimeoutMs', 60_000)
  const warmupMs = renamed('warmup', 'warmupMs', 120_000)
  const maxRequestMs = duration('maxRequestMs', SHUTDOWN_DEFAULTS.maxRequestMs)
  if (o.readiness !== undefined && (!Array.isArray(o.readiness) || o.readiness.some((c) => typeof c !== 'function'))) {
    throw new InvalidOptionError('readiness', 'must be an array of functions, e.g. [async () => db.ping()]')
  }
  const weight = o.weight ?? 100
  if (typeof weight !== 'number' || !Number.isFinite(weight) || weight < 0) throw new InvalidOptionError('weight', `must be a non-negative number (got ${type(weight)})`)
  const window = propagationWindow(o.windows ?? suggestedWindows ?? 'kubernetes')

  const sidecar = resolveSidecar(o.sidecar)

  let admin: ResolvedOptions['admin'] = false
  if (o.admin !== false) {
    const a = o.admin ?? {}
    if (typeof a !== 'object' || a === null) throw new InvalidOptionError('admin', `must be an object like { host, port, token } or false (got ${type(a)})`)
    const host = a.host ?? '127.0.0.1'
    if (typeof host !== 'string' || (isIP(host) === 0 && host !== 'localhost')) throw new InvalidOptionError('admin.host', `must be an IP address to bind, e.g. '127.0.0.1' (got ${type(host)})`)
    const p = a.port === 'auto' ? 'auto' : port('admin.port', a.port ?? DEFAULT_ADMIN_PORT, true)
    if (a.token !== undefined && (typeof a.token !== 'string' || a.token.length < 8)) throw new InvalidOptionError('admin.token', 'must be a string of at least 8 characters, e.g. process.env.LAMEDUCK_TOKEN')
    // A token no client can send (spaces at the ends are stripped from headers, control and non-ASCII characters are refused) locks the admin API forever.
    if (a.token !== undefined && !TOKEN.test(a.token)) throw new InvalidOptionError('admin.token', 'must be printable ASCII without spaces at either end (no control characters, no non-ASCII), or no client can send it in an authorization header; check for a trailing newline from the secret file, e.g. token.trim()')
    if (!isLoopback(host) && a.token === undefined) throw new InvalidOptionError('admin.token', `required when admin.host is not loopback ('${host}'): anyone who can reach it could take the instance offline. Set admin.token or bind admin.host to 127.0.0.1`)
    admin = { host, port: p, token: a.token }
  }

  let signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT']
  if (o.signals === false) signals = []
  else if (o.signals !== undefined) {
    // Known names only: a typo ('SIGTREM') would never fire, and SIGKILL/SIGSTOP cannot be caught (process.on throws EINVAL).
    const at = Array.isArray(o.signals) ? o.signals.findIndex((s) => typeof s !== 'string' || !Object.hasOwn(constants.signals, s) || s === 'SIGKILL' || s === 'SIGSTOP') : -2
    if (at !== -1) throw new InvalidOptionError('signals', `must be an array of signal names like ['SIGTERM', 'SIGINT'] (SIGKILL and SIGSTOP cannot be caught), or false (got ${type(at === -2 ? o.signals : o.signals![at])})`)
    signals = o.signals
  }

  const sidecarBound = sidecar === false ? 0 : sidecar.drainTimeoutMs
  const shutdownTimeoutMs = duration('shutdownTimeoutMs', defaultShutdownTimeoutMs(window.totalMs, { maxRequestMs, sidecarDrainTimeoutMs: sidecarBound }))
  if (window.totalMs > shutdownTimeoutMs) {
    throw new InvalidOptionError('shutdownTimeoutMs', `${shutdownTimeoutMs} ms is shorter than the propagation window (${window.totalMs} ms: ${window.breakdown.map((b) => `${b.part} ${b.ms}`).join(' + ')}): a shutdown would stop while consumers still route here. Raise shutdownTimeoutMs (and terminationGracePeriodSeconds) to at least ${window.totalMs + maxRequestMs} ms, or lower the windows`)
  }

  let earlyOffline: ResolvedOptions['earlyOffline'] = false
  if (o.earlyOffline === true) earlyOffline = { quietMs: 1_000 }
  else if (typeof o.earlyOffline === 'object' && o.earlyOffline !== null) {
    const quietMs = o.earlyOffline.quietMs ?? 1_000
    assertDuration('earlyOffline.quietMs', quietMs)
    earlyOffline = { quietMs }
  } else if (o.earlyOffline !== undefined && o.earlyOffline !== false) throw new InvalidOptionError('earlyOffline', `must be a boolean or { quietMs } (got ${type(o.earlyOffline)})`)

  let routes: ResolvedOptions['routes'] = { ready: '/health/ready', live: '/health/live' }
  if (o.routes === false) routes = false
  else if (o.routes !== undefined) {
    const r = o.routes
    for (const k of ['ready', 'live'] as const) if (r[k] !== undefined && (typeof r[k] !== 'string' || !r[k].startsWith('/'))) throw new InvalidOptionError(`routes.${k}`, `must be a path starting with '/' (got ${type(r[k])})`)
    routes = { ready: r.ready ?? '/health/ready', live: r.live ?? '/health/live' }
  }

  return {
    service: o.service,
    host: o.host,
    port: o.port,
    instanceId: o.instanceId,
    metadata: o.metadata ?? {},
    registry: o.registry,
    delayMs,
    readiness: o.readiness ?? [],
    readinessTimeoutMs,
    warmupMs,
    deprecations,
    weight,
    window,
    maxRequestMs,
    sidecar,
    admin,
    signals,
    shutdownTimeoutMs,
    earlyOffline,
    routes,
    metrics: resolveMetrics(o.metrics, admin, routes),
    ...resolveIntegration(o)
  }
}

/** The options that fit the engine into an app (a framework adapter sets them). */
function resolveIntegration (o: AttachOptions): Pick<ResolvedOptions, 'logger' | 'serveRoutes' | 'closeApp' | 'terminate'> {
  const l = o.logger as unknown as Record<string, unknown> | undefined
  if (l !== undefined && (typeof l !== 'object' || l === null || ['info', 'warn', 'error'].some((m) => typeof l[m] !== 'function'))) {
    throw new InvalidOptionError('logger', `must be a pino-compatible logger with info(), warn() and error(), e.g. pino() or app.log (got ${type(l)})`)
  }
  if (o.serveRoutes !== undefined && typeof o.serveRoutes !== 'boolean') throw new InvalidOptionError('serveRoutes', `must be a boolean (got ${type(o.serveRoutes)})`)
  for (const name of ['closeApp', 'terminate'] as const) {
    if (o[name] !== undefined && typeof o[name] !== 'function') throw new InvalidOptionError(name, `must be a function (got ${type(o[name])})`)
  }
  return { logger: o.logger, serveRoutes: o.serveRoutes ?? true, closeApp: o.closeApp, terminate: o.terminate }
}

function resolveMetrics (m: LameduckOptions['metrics'], admin: ResolvedOptions['admin'], routes: ResolvedOptions['routes']): ResolvedMetrics {
  if (m === false) return { listener: false, path: '/metrics', registry: undefined }
  if (m !== undefined && (typeof m !== 'object' || m === null || Array.isArray(m))) throw new InvalidOptionError('metrics', `must be an object like { listener: 'app', path: '/metrics' } or false (got ${type(m)})`)
  const listener = m?.listener ?? 'admin'
  if (listener !== 'app' && listener !== 'admin' && listener !== false) throw new InvalidOptionError('metrics.listener', `must be 'app', 'admin' or false (got ${type(listener)})`)
  if (listener === 'admin' && admin === false && m?.listener === 'admin') throw new InvalidOptionError('metrics.listener', "'admin' needs the admin listener (admin is false); use listener: 'app' to serve the metrics on the application port")
  const path = m?.path ?? '/metrics'
  if (typeof path !== 'string' || !path.startsWith('/') || path.includes('?')) throw new InvalidOptionError('metrics.path', `must be a path starting with '/' (got ${type(path)})`)
  if (listener === 'app' && routes !== false && (path === routes.ready || path === routes.live)) throw new InvalidOptionError('metrics.path', `'${path}' is already a probe route; choose another path`)
  const registry = m?.registry
  if (registry !== undefined && (typeof registry !== 'object' || registry === null || typeof (registry as Partial<PromRegistryLike>).registerMetric !== 'function')) {
    throw new InvalidOptionError('metrics.registry', `must be a prom-client Registry, e.g. (await import('prom-client')).register (got ${type(registry)})`)
  }
  return { listener, path, registry }
}
