import { isLoopback } from './host.ts'
import { resolveSidecar } from './sidecar.ts'
import { telemetryWiring } from './telemetry-options.ts'
import type { OpenTelemetryOptions } from './opentelemetry.ts'
import { constants } from 'node:os'
import type { EnvoySidecarOptions } from '@lameduck/envoy'
import { DEFAULT_ADMIN_PORT, InvalidOptionError, READINESS_WHILE_DRAINING, SHUTDOWN_DEFAULTS, checkKeys, count, deprecatedAlias, duration, flag, fn, observers, oneOf, record, resolveLifecycleOptions, show, withMethods, type DrainStep, type LifecycleObserver, type Logger, type PropagationWindow, type ReadinessCheck, type ReadinessWhileDraining, type Registry, type ResolvedLifecycleOptions, type StartupStep, type WindowEvidence, type WindowsInput } from '@lameduck/core'
import { net } from './builtins.ts'

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
  /**
   * What /health/ready answers while draining: 'fail' (default: 503 from the start of the drain) or
   * 'serve' (200 until the drain is over: a single replica, externalTrafficPolicy: Local; see the README).
   */
  readinessWhileDraining?: ReadinessWhileDraining
  /**
   * The pod's termination message: a short account of the last drain written where `kubectl describe
   * pod` shows it. Default: Kubernetes' /dev/termination-log, written only where it exists; `{ path }`
   * for another file; false for none.
   */
  terminationMessage?: { path?: string } | false
  /**
   * Collaborators on the lifecycle's events (telemetry, a readiness gate, Kubernetes events):
   * each `{ name, attach({ lifecycle, logger }) }`, attached when the engine is built and
   * detached (awaited) when it closes. Default none.
   */
  observers?: LifecycleObserver[]
  /**
   * Evidence for the window's endpoint term instead of the fixed endpointLagMs, e.g.
   * observedWindow() from @lameduck/kubernetes (this pod's own endpoint in its EndpointSlices).
   */
  windowEvidence?: WindowEvidence
  /**
   * OpenTelemetry through @opentelemetry/api: a span per offline and online sequence and the
   * lifecycle metrics, on by default (no-ops until the app registers an SDK); `{ flush: () =>
   * sdk.shutdown(), flushTimeoutMs }` exports the last of them before the process ends, the flush
   * inside shutdownTimeoutMs; `{ tracerProvider, meterProvider }` instead of the global ones; false: off.
   */
  openTelemetry?: OpenTelemetryOptions | false
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
  /** Deprecated option names that were used, with the message to log once. */
  deprecations: string[]
  window: PropagationWindow
  maxRequestMs: number
  /** The lifecycle's options, checked once here: new Lifecycle() trusts them. */
  lifecycle: ResolvedLifecycleOptions
  sidecar: ResolvedSidecar | false
  admin: { host: string, port: number | 'auto', token: string | undefined } | false
  signals: NodeJS.Signals[]
  shutdownTimeoutMs: number
  earlyOffline: { quietMs: number } | false
  readinessWhileDraining: ReadinessWhileDraining
  terminationMessage: { path: string | undefined } | false
  observers: LifecycleObserver[]
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

/** Every option, checked against the type by the compiler; deprecated names are accepted, never suggested. */
const KNOWN = {
  service: true,
  host: true,
  port: true,
  instanceId: true,
  metadata: true,
  registry: true,
  delayMs: true,
  delay: 'deprecated',
  readiness: true,
  readinessTimeoutMs: true,
  warmupMs: true,
  warmup: 'deprecated',
  weight: true,
  windows: true,
  maxRequestMs: true,
  sidecar: true,
  admin: true,
  signals: true,
  shutdownTimeoutMs: true,
  earlyOffline: true,
  readinessWhileDraining: true,
  terminationMessage: true,
  observers: true,
  windowEvidence: true,
  openTelemetry: true,
  routes: true,
  metrics: true,
  logger: true,
  serveRoutes: true,
  closeApp: true,
  terminate: true
} satisfies Record<keyof AttachOptions, true | 'deprecated'>

// Printable ASCII, no whitespace at either end: what survives an `authorization` header unchanged.
const TOKEN = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/

function text (option: string, value: unknown, hint: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new InvalidOptionError(option, `${hint} (got ${show(value)})`)
  return value
}

/**
 * Validates the options once, at attach() (the fastify plugin passes them
 * through). The lifecycle's own options are checked by core's
 * resolveLifecycleOptions() under the same names, and the Lifecycle trusts the
 * result. Every error names the option and the fix.
 */
export function resolveOptions (input: AttachOptions, suggestedWindows?: WindowsInput): ResolvedOptions {
  record('options', input, "{ service: 'orders', registry }")
  const o = input
  checkKeys('', o, KNOWN)
  const service = text('service', o.service, "required: the registry app / service name, e.g. service: 'orders'")
  if (o.host !== undefined) text('host', o.host, 'must be the address consumers reach this instance at, e.g. process.env.POD_IP')
  if (o.port !== undefined) count('port', o.port, 0, { min: 1, max: 65535 })
  if (o.instanceId !== undefined) text('instanceId', o.instanceId, 'must be a non-empty string')
  const metadata = record('metadata', o.metadata ?? {}, "{ zone: 'a' } (strings)")
  for (const [k, v] of Object.entries(metadata)) if (typeof v !== 'string') throw new InvalidOptionError(`metadata.${k}`, `must be a string (got ${show(v)})`)

  const deprecations: string[] = []
  const renamed = (old: 'delay' | 'warmup', name: 'delayMs' | 'warmupMs'): number | undefined => {
    const v = deprecatedAlias(o, old, name, (m) => deprecations.push(`lameduck: ${m}; '${old}' goes in the next minor version`))
    return o[old] === undefined ? v as number | undefined : duration(old, v, 0) // named as the user wrote it
  }
  const sidecar = resolveSidecar(o.sidecar)
  const telemetry = telemetryWiring({ openTelemetry: o.openTelemetry, shutdownTimeoutMs: o.shutdownTimeoutMs, terminate: o.terminate, service, observers: observers('observers', o.observers) })
  const lifecycle = resolveLifecycleOptions({
    registry: o.registry,
    windows: o.windows ?? suggestedWindows ?? 'kubernetes',
    delayMs: renamed('delay', 'delayMs'),
    readiness: o.readiness,
    readinessTimeoutMs: o.readinessTimeoutMs,
    warmupMs: renamed('warmup', 'warmupMs') ?? 120_000,
    weight: o.weight,
    maxRequestMs: o.maxRequestMs ?? SHUTDOWN_DEFAULTS.maxRequestMs,
    beforeRegister: sidecar === false ? [] : sidecar.beforeRegister,
    afterWindow: sidecar === false ? [] : sidecar.afterWindow,
    windowEvidence: o.windowEvidence,
    // The lifecycle bounds an unconfirmed deregistration by it; the signal path forces exit at it.
    shutdownTimeoutMs: telemetry.drainBoundMs as number | undefined
  })
  const { window, maxRequestMs } = lifecycle
  const admin = resolveAdmin(o.admin)
  const routes = resolveRoutes(o.routes)
  return {
    service,
    host: o.host,
    port: o.port,
    instanceId: o.instanceId,
    metadata: metadata as Record<string, string>,
    deprecations,
    window,
    maxRequestMs,
    lifecycle,
    sidecar,
    admin,
    signals: resolveSignals(o.signals),
    shutdownTimeoutMs: checkShutdownTimeout(lifecycle.shutdownTimeoutMs, window, maxRequestMs),
    earlyOffline: resolveEarlyOffline(o.earlyOffline),
    readinessWhileDraining: oneOf('readinessWhileDraining', o.readinessWhileDraining, READINESS_WHILE_DRAINING, 'fail'),
    terminationMessage: resolveTerminationMessage(o.terminationMessage),
    observers: withRegistryObservers(telemetry.observers, o.registry),
    routes,
    metrics: resolveMetrics(o.metrics, admin, routes),
    ...resolveIntegration(o),
    terminate: telemetry.terminate
  }
}

/** The admin listener's options; `at` is where they sit ('admin.' in attach(), '' in clusterAdmin()). */
export function resolveAdmin (value: LameduckOptions['admin'], at = 'admin.'): ResolvedOptions['admin'] {
  if (value === false) return false
  const a = record(at === '' ? 'options' : at.slice(0, -1), value ?? {}, '{ host, port, token } or false') as AdminOptions
  const host = a.host ?? '127.0.0.1'
  if (typeof host !== 'string' || (net().isIP(host) === 0 && host !== 'localhost')) throw new InvalidOptionError(`${at}host`, `must be an IP address to bind, e.g. '127.0.0.1' (got ${show(host)})`)
  const p = a.port === 'auto' ? 'auto' : count(`${at}port`, a.port, DEFAULT_ADMIN_PORT, { max: 65535 })
  if (a.token !== undefined && (typeof a.token !== 'string' || a.token.length < 8)) throw new InvalidOptionError(`${at}token`, 'must be a string of at least 8 characters, e.g. process.env.LAMEDUCK_TOKEN')
  // A token no client can send (spaces at the ends are stripped from headers, control and non-ASCII characters are refused) locks the admin API forever.
  if (a.token !== undefined && !TOKEN.test(a.token)) throw new InvalidOptionError(`${at}token`, 'must be printable ASCII without spaces at either end (no control characters, no non-ASCII), or no client can send it in an authorization header; check for a trailing newline from the secret file, e.g. token.trim()')
  if (!isLoopback(host) && a.token === undefined) throw new InvalidOptionError(`${at}token`, `required when ${at}host is not loopback ('${host}'): anyone who can reach it could take the instance offline. Set ${at}token or bind ${at}host to 127.0.0.1`)
  return { host, port: p, token: a.token }
}

/** The signals that start a graceful shutdown; `false` for none. */
export function resolveSignals (value: LameduckOptions['signals']): NodeJS.Signals[] {
  if (value === false) return []
  if (value === undefined) return ['SIGTERM', 'SIGINT']
  // Known names only: a typo ('SIGTREM') would never fire, and SIGKILL/SIGSTOP cannot be caught (process.on throws EINVAL).
  const at = Array.isArray(value) ? value.findIndex((s) => typeof s !== 'string' || !Object.hasOwn(constants.signals, s) || s === 'SIGKILL' || s === 'SIGSTOP') : -2
  if (at !== -1) throw new InvalidOptionError('signals', `must be an array of signal names like ['SIGTERM', 'SIGINT'] (SIGKILL and SIGSTOP cannot be caught), or false (got ${show(at === -2 ? value : value[at])})`)
  return value
}

/** The lifecycle resolved it (default: window + sidecar drain + maxRequestMs + slack); here, what a host adds. */
function checkShutdownTimeout (ms: number, window: PropagationWindow, maxRequestMs: number): number {
  if (window.totalMs > ms) {
    throw new InvalidOptionError('shutdownTimeoutMs', `${ms} ms is shorter than the propagation window (${window.totalMs} ms: ${window.breakdown.map((b) => `${b.part} ${b.ms}`).join(' + ')}): a shutdown would stop while consumers still route here. Raise shutdownTimeoutMs (and terminationGracePeriodSeconds) to at least ${window.totalMs + maxRequestMs} ms, or lower the windows`)
  }
  return ms
}

function resolveTerminationMessage (value: LameduckOptions['terminationMessage']): ResolvedOptions['terminationMessage'] {
  if (value === false) return false
  if (value === undefined) return { path: undefined }
  const t = record('terminationMessage', value, "{ path: '/dev/termination-log' }, or false")
  checkKeys('terminationMessage', t, { path: true })
  return { path: t.path === undefined ? undefined : text('terminationMessage.path', t.path, "a file path, e.g. '/dev/termination-log'") }
}

function resolveEarlyOffline (value: LameduckOptions['earlyOffline']): ResolvedOptions['earlyOffline'] {
  if (value === undefined || value === false) return false
  if (value === true) return { quietMs: 1_000 }
  const e = record('earlyOffline', value, '{ quietMs: 1000 }, or a boolean')
  return { quietMs: duration('earlyOffline.quietMs', e.quietMs, 1_000) }
}

function resolveRoutes (value: LameduckOptions['routes']): ResolvedOptions['routes'] {
  if (value === false) return false
  const r = record('routes', value ?? {}, "{ ready: '/health/ready', live: '/health/live' } or false")
  for (const k of ['ready', 'live'] as const) if (r[k] !== undefined && (typeof r[k] !== 'string' || !r[k].startsWith('/'))) throw new InvalidOptionError(`routes.${k}`, `must be a path starting with '/' (got ${show(r[k])})`)
  return { ready: (r.ready as string | undefined) ?? '/health/ready', live: (r.live as string | undefined) ?? '/health/live' }
}

/** The options that fit the engine into an app (a framework adapter sets them). */
function resolveIntegration (o: AttachOptions): Pick<ResolvedOptions, 'logger' | 'serveRoutes' | 'closeApp' | 'terminate'> {
  return {
    logger: o.logger === undefined ? undefined : withMethods<Logger>('logger', o.logger, ['info', 'warn', 'error'], 'a pino-compatible logger, e.g. pino() or app.log,'),
    serveRoutes: flag('serveRoutes', o.serveRoutes, true),
    closeApp: o.closeApp === undefined ? undefined : fn('closeApp', o.closeApp, '() => app.close()'),
    terminate: o.terminate === undefined ? undefined : fn('terminate', o.terminate, '(code) => process.exit(code)')
  }
}

function resolveMetrics (m: LameduckOptions['metrics'], admin: ResolvedOptions['admin'], routes: ResolvedOptions['routes']): ResolvedMetrics {
  if (m === false) return { listener: false, path: '/metrics', registry: undefined }
  const given = record('metrics', m ?? {}, "{ listener: 'app', path: '/metrics' } or false") as MetricsOptions
  const listener = oneOf<'app' | 'admin' | false>('metrics.listener', given.listener, ['app', 'admin', false], 'admin')
  if (listener === 'admin' && admin === false && given.listener === 'admin') throw new InvalidOptionError('metrics.listener', "'admin' needs the admin listener (admin is false); use listener: 'app' to serve the metrics on the application port")
  const path = given.path ?? '/metrics'
  if (typeof path !== 'string' || !path.startsWith('/') || path.includes('?')) throw new InvalidOptionError('metrics.path', `must be a path starting with '/' (got ${show(path)})`)
  if (listener === 'app' && routes !== false && (path === routes.ready || path === routes.live)) throw new InvalidOptionError('metrics.path', `'${path}' is already a probe route; choose another path`)
  const registry = given.registry === undefined ? undefined : withMethods<PromRegistryLike>('metrics.registry', given.registry, ['registerMetric'], "a prom-client Registry, e.g. (await import('prom-client')).register,")
  return { listener, path, registry }
}

/**
 * The registry's own collaborators (an adapter's weight ramp) beside the user's, checked like
 * them; one the user passed already is not attached twice.
 */
function withRegistryObservers (list: LifecycleObserver[], registry: Registry | undefined): LifecycleObserver[] {
  const extra = observers('registry.observers', registry?.observers === undefined ? undefined : [...registry.observers])
  return [...list, ...extra.filter((observer) => !list.includes(observer))]
}
