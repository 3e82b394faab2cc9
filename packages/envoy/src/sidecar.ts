// Lifecycle steps for an app behind an Envoy sidecar (the plugin's `sidecar` option):
// before registering, wait until Envoy is LIVE; after the propagation window, drain
// Envoy and wait for its downstream connections to go. The drain step never throws on
// Envoy failures and never ends early because of them: it reports through ctx.problem.
import { backoff, InvalidOptionError, SHUTDOWN_DEFAULTS, type BackoffOptions, type DrainStep, type StartupStep } from '@lameduck/core'
import { EnvoyAdmin, type ConnectionCountOptions } from './admin-client.ts'
import { ENVOY_ERROR_CODES, EnvoyAdminError } from './errors.ts'
import { ISTIO_INBOUND_LISTENERS } from './count-connections.ts'
import { CONTOUR_BACKOFF, drainEnvoy, type DrainProgress } from './drain-envoy.ts'
import { count, duration, flag, oneOf, strings } from './options.ts'

export type SidecarDrain = 'listeners' | 'healthcheck' | false

export interface EnvoySidecarOptions {
  /** Admin URL or a client. Default 'http://127.0.0.1:15000'. */
  envoyAdmin?: string | URL | EnvoyAdmin
  /** Wait for `/ready` to say LIVE before registering. Default true. */
  waitReady?: boolean
  /** Startup fails if Envoy is not LIVE by then. Default 60 000. */
  readyTimeoutMs?: number
  /** Default 500. */
  readyIntervalMs?: number
  /**
   * After the window: 'listeners' = `POST /drain_listeners?inboundonly&graceful` (Istio's
   * sidecar drain), 'healthcheck' = `POST /healthcheck/fail` (Contour's), false = no step.
   * Default 'listeners'.
   */
  drain?: SidecarDrain
  /** drain 'listeners': only inbound listeners. Default true (a sidecar's outbound side serves the app). */
  inboundOnly?: boolean
  /** drain 'listeners': never stop the listeners (`skip_exit`). Default false. */
  skipExit?: boolean
  /** The drain step is done when at most this many connections remain. Default 0. */
  maxOpenConnections?: number
  /** Wait at least this long after the drain call, even at 0 connections. Default 0. */
  minDrainMs?: number
  /** Bound on the whole drain step. Default 30 000 (core's SHUTDOWN_DEFAULTS.sidecarDrainTimeoutMs, which the shutdown budget counts). */
  drainTimeoutMs?: number
  /** Pause between connection polls. Default 1000. */
  checkIntervalMs?: number
  /**
   * End the drain step before the connections reach `maxOpenConnections` once those left are
   * idle and told to close: no request in flight on the app's HCMs (`http.*.downstream_rq_active`)
   * and none received (`downstream_rq_total` unchanged) for this long, after the drain made
   * every next response close its connection. Real Envoy never closes an idle keep-alive
   * connection (envoyproxy/envoy#42305): without this a consumer's pooled connection holds
   * the step to drainTimeoutMs. false: only the count decides. Default 2000.
   */
  idleQuietMs?: number | false
  /**
   * When Envoy cannot count its connections (Istio keeps `downstream_cx_active` only with
   * EXIT_ON_ZERO_ACTIVE_CONNECTIONS), wait this long after the drain call instead of
   * polling to drainTimeoutMs. Default 5000: Istio's terminationDrainDuration, the time
   * Istio itself gives Envoy when it does not count.
   */
  unavailableWaitMs?: number
  /**
   * How to count connections. Default { method: 'istio' } (listener stats, so TCP proxies
   * count too); with drain 'listeners' and inboundOnly, `inboundListeners` defaults to
   * Istio's inbound listener (ISTIO_INBOUND_LISTENERS), so the app's own outbound
   * connections do not hold the drain; [] counts every listener.
   */
  connections?: Omit<ConnectionCountOptions, 'signal'>
  /** Tries of the drain call. Default 4 (Contour). */
  drainAttempts?: number
  /** Delays between those tries. Default Contour's: 200 ms, x5, 10% jitter. */
  drainBackoff?: BackoffOptions
  /** Bound on each admin request. Default 2000. */
  timeoutMs?: number
}

export interface ResolvedEnvoySidecarOptions {
  adminUrl: string
  waitReady: boolean
  readyTimeoutMs: number
  readyIntervalMs: number
  drain: SidecarDrain
  inboundOnly: boolean
  skipExit: boolean
  maxOpenConnections: number
  minDrainMs: number
  drainTimeoutMs: number
  checkIntervalMs: number
  idleQuietMs: number | false
  unavailableWaitMs: number
  inboundListeners: readonly string[] | undefined
  drainAttempts: number
  drainBackoff: BackoffOptions
}

export interface EnvoySidecar {
  beforeRegister: StartupStep[]
  afterWindow: DrainStep[]
  admin: EnvoyAdmin
  /** Resolved options, e.g. for checking `readyTimeoutMs`/`drainTimeoutMs` against a shutdown budget. */
  options: ResolvedEnvoySidecarOptions
  /** Closes the admin client's sockets (not a client passed in). */
  close(): Promise<void>
}

export function envoySidecar (options: EnvoySidecarOptions = {}): EnvoySidecar {
  if (typeof options !== 'object' || options === null) throw new InvalidOptionError('sidecar', 'must be an object, e.g. { envoyAdmin: \'http://127.0.0.1:15000\', waitReady: true, drain: \'listeners\' }')
  const given = options.envoyAdmin
  const owned = !(given instanceof EnvoyAdmin)
  const admin = given instanceof EnvoyAdmin
    ? given
    : prefixed(() => new EnvoyAdmin({ url: given, timeoutMs: options.timeoutMs, connections: options.connections }))
  const o = resolveSidecarOptions(options, admin.url)
  return {
    beforeRegister: o.waitReady ? [readyStep(admin, o)] : [],
    afterWindow: o.drain === false ? [] : [drainStep(admin, o, o.drain)],
    admin,
    options: o,
    close: () => owned ? admin.close() : Promise.resolve()
  }
}

function resolveSidecarOptions (options: EnvoySidecarOptions, adminUrl: string): ResolvedEnvoySidecarOptions {
  const o: ResolvedEnvoySidecarOptions = {
    adminUrl,
    waitReady: flag('sidecar.waitReady', options.waitReady, true),
    readyTimeoutMs: duration('sidecar.readyTimeoutMs', options.readyTimeoutMs, 60_000),
    readyIntervalMs: duration('sidecar.readyIntervalMs', options.readyIntervalMs, 500, { positive: true }),
    drain: oneOf<SidecarDrain>('sidecar.drain', options.drain, ['listeners', 'healthcheck', false], 'listeners'),
    inboundOnly: flag('sidecar.inboundOnly', options.inboundOnly, true),
    skipExit: flag('sidecar.skipExit', options.skipExit, false),
    maxOpenConnections: count('sidecar.maxOpenConnections', options.maxOpenConnections, 0),
    minDrainMs: duration('sidecar.minDrainMs', options.minDrainMs, 0),
    drainTimeoutMs: duration('sidecar.drainTimeoutMs', options.drainTimeoutMs, SHUTDOWN_DEFAULTS.sidecarDrainTimeoutMs),
    checkIntervalMs: duration('sidecar.checkIntervalMs', options.checkIntervalMs, 1000, { positive: true }),
    idleQuietMs: options.idleQuietMs === false ? false : duration('sidecar.idleQuietMs', options.idleQuietMs, 2000),
    unavailableWaitMs: duration('sidecar.unavailableWaitMs', options.unavailableWaitMs, 5000),
    inboundListeners: strings('sidecar.connections.inboundListeners', options.connections?.inboundListeners) ??
      (options.drain !== 'healthcheck' && options.drain !== false && options.inboundOnly !== false ? ISTIO_INBOUND_LISTENERS : undefined),
    drainAttempts: count('sidecar.drainAttempts', options.drainAttempts, 4) || 1,
    drainBackoff: backoff('sidecar.drainBackoff', options.drainBackoff, CONTOUR_BACKOFF)
  }
  if (o.minDrainMs > o.drainTimeoutMs) {
    throw new InvalidOptionError('sidecar.minDrainMs', `(${o.minDrainMs} ms) must not exceed sidecar.drainTimeoutMs (${o.drainTimeoutMs} ms)`)
  }
  return o
}

function readyStep (admin: EnvoyAdmin, o: ResolvedEnvoySidecarOptions): StartupStep {
  return {
    name: 'envoy ready',
    async run ({ signal, clock, logger }) {
      logger.info({ envoy: { url: o.adminUrl } }, `lameduck: waiting for Envoy at ${o.adminUrl} to be LIVE`)
      await admin.waitReady({ timeoutMs: o.readyTimeoutMs, intervalMs: o.readyIntervalMs, signal, clock })
    }
  }
}

type StepContext = Parameters<DrainStep['run']>[0]

interface ProgressReporter {
  onProgress(event: DrainProgress): void
  /** Once the wait ended: what was held back is a problem only if the phase did not end on other evidence. */
  settle(outcome: string): void
}

/**
 * The drain's progress as log lines; each kind of stats failure reported once as a problem.
 * "Count unavailable" is held back: under Istio's default stats inclusion Envoy has no listener
 * count at all, and when the request gauges end the phase ('idle') nothing went wrong.
 */
function progressReporter (o: ResolvedEnvoySidecarOptions, { logger, problem }: StepContext): ProgressReporter {
  const reported = new Set<string>()
  let unavailable: unknown = null
  const onProgress = (event: DrainProgress): void => {
    switch (event.type) {
      case 'attempt-failed':
        logger.warn({ err: event.error, envoy: { action: event.call.action, attempt: event.attempt } }, `lameduck: Envoy ${event.call.action} attempt ${event.attempt} failed`)
        break
      case 'sent':
        logger.info({ envoy: { action: event.call.action, url: o.adminUrl } }, `lameduck: Envoy ${event.call.action} sent, waiting for \u2264 ${o.maxOpenConnections} connections`)
        break
      case 'idle-rule':
        logger.debug({ envoy: { idleFromMs: event.fromMs } }, `lameduck: Envoy idle rule: ${event.reason}`)
        break
      case 'poll':
        logger.debug({ envoy: { activeConnections: event.count } }, 'lameduck: Envoy connections')
        break
      case 'poll-error': {
        // Each kind of failure once: a dead stats endpoint polled for 30 s is one problem.
        const key = event.error instanceof EnvoyAdminError ? event.error.code : String(event.error)
        if (reported.has(key)) return
        reported.add(key)
        if (key === ENVOY_ERROR_CODES.STATS_UNAVAILABLE) unavailable = event.error; else problem(event.error)
      }
    }
  }
  const settle = (outcome: string): void => {
    if (unavailable === null) return
    if (outcome === 'idle' || outcome === 'drained') {
      logger.info({ envoy: { outcome } }, `lameduck: Envoy's connection count was not available (${(unavailable as Error).message}); the drain ended on other evidence (${outcome})`)
    } else {
      problem(unavailable)
    }
  }
  return { onProgress, settle }
}

function drainStep (admin: EnvoyAdmin, o: ResolvedEnvoySidecarOptions, strategy: 'listeners' | 'healthcheck'): DrainStep {
  return {
    name: 'envoy drain',
    async run (ctx) {
      const { signal, clock, logger, problem } = ctx
      const reporter = progressReporter(o, ctx)
      // The whole step, retries of the drain call included, is bounded by drainTimeoutMs
      // (plus at most one admin request in flight at the deadline): the shutdown budget counts on it.
      const result = await drainEnvoy(admin, {
        strategy,
        inboundOnly: o.inboundOnly,
        skipExit: o.skipExit,
        attempts: o.drainAttempts,
        backoff: o.drainBackoff,
        maxOpenConnections: o.maxOpenConnections,
        minDrainMs: o.minDrainMs,
        checkIntervalMs: o.checkIntervalMs,
        idleQuietMs: o.idleQuietMs === false ? undefined : o.idleQuietMs,
        timeoutMs: o.drainTimeoutMs,
        unavailableWaitMs: o.unavailableWaitMs,
        inboundListeners: o.inboundListeners,
        signal,
        clock,
        onProgress: reporter.onProgress
      })
      reporter.settle(result.outcome)
      // Nothing was drained, so there is nothing to wait for.
      if (result.outcome === 'not-sent') problem(result.error)
      if (result.outcome === 'idle') {
        logger.info({ envoy: { openConnections: result.count, waitedMs: result.elapsedMs } }, `lameduck: Envoy's ${result.count} remaining connection(s) are idle and close on their next response; no request for ${String(o.idleQuietMs)} ms`)
      }
      if (result.outcome === 'unavailable') {
        logger.info({ envoy: { waitedMs: result.elapsedMs } }, `lameduck: Envoy does not expose its connection count; waited ${result.elapsedMs} ms (sidecar.unavailableWaitMs)`)
      }
      if (result.outcome === 'deadline') {
        const last = result.count === -1 ? 'no successful reading' : `${result.count} still open`
        problem(new EnvoyAdminError(ENVOY_ERROR_CODES.TIMEOUT, `Envoy connections did not drain to \u2264 ${o.maxOpenConnections} within sidecar.drainTimeoutMs (${o.drainTimeoutMs} ms): ${last}`, { url: admin.url, method: 'GET' }))
      }
    }
  }
}

// Client option errors say `envoyAdmin.url`; in this helper the option is `sidecar.envoyAdmin`.
function prefixed<T> (fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    if (err instanceof InvalidOptionError) {
      const option = err.option === 'envoyAdmin.url' ? 'sidecar.envoyAdmin' : err.option.replace(/^envoyAdmin\./, 'sidecar.')
      throw new InvalidOptionError(option, err.message.slice(err.option.length + 2))
    }
    throw err
  }
}
