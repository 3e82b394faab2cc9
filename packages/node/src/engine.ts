import { attachObservers, buildStatus, ConsumerTracker, Emitter, redactedErrorCopy, InFlightTracker, isLeaving, Lifecycle, type LifecycleEvents, type LifecycleStatus, type Logger, type StateChange } from '@lameduck/core'
import { lifecycleBackend } from './admin-actions.ts'
import type { ConnectionStats } from './connections.ts'
import { startAdmin, type AdminServer } from './admin.ts'
import { workerResponder } from './cluster-worker.ts'
import { defaultHost, unreachableAdvertised } from './host.ts'
import { stderrLogger } from './logger.ts'
import { Metrics } from './metrics.ts'
import type { ResolvedOptions } from './options.ts'
import { probeAnswer, type ProbeAnswer, type ProbeKind } from './probes.ts'
import { installSignals } from './signals.ts'
import { watchWindowEnd } from './window-watch.ts'
import { TerminationMessage } from './termination-message.ts'
import { createHandle, type GoingAway, type LameduckHandle } from './handle.ts'

/** Where a transport's server listens once it takes traffic. */
export interface ListenAddress { address: string, port: number }

/**
 * What carries the traffic of one engine: attach()'s HTTP server, attachGrpc()'s
 * gRPC server. The engine owns the lifecycle and everything around it (options,
 * registry, windows, admin, metrics, signals, termination message, sidecar);
 * the transport owns the server: it counts requests into `host.inflight`, marks
 * responses while leaving, and closes connections.
 */
export interface Transport {
  /** Open connections, for /status, the metrics and what a forced exit cut. */
  stats(): ConnectionStats
  /** Names what is in flight (method, path, age): for logs of what a bound cut. */
  describeInflight(): string
  /** Long-lived connections or streams the app ends on 'goingAway' (WebSockets, streaming calls). */
  longLived(): number
  /** Each lifecycle state change, after the engine's own handling and before a 'closing' goingAway. */
  onState(change: StateChange): void
  /** Before the engine emits 'goingAway' (the window is over, or the app closes). */
  goingAway?(cause: GoingAway['cause']): void
  /** Calls `start` once the server takes traffic (listening, bound); returns the canceller. */
  whenReady(start: () => void): () => void
  /** The address and port the server listens on, once ready; null before. */
  address(): ListenAddress | null
  /** Warnings worth giving once, as the lifecycle starts (e.g. keep-alive against the window). */
  checkAtStart?(): void
  /** After the offline sequence: connections go by themselves (bounded), then the server closes. */
  closeAfterDrain(): Promise<void>
  /** The forced end of a shutdown: destroy every connection now. */
  destroyAll(): void
  /** Undoes everything installed on the server (the engine is closing). */
  detach(): void
}

/** What the engine lends its transport. */
export interface TransportHost {
  readonly options: ResolvedOptions
  readonly log: Logger
  readonly lifecycle: Lifecycle
  /** The in-flight counter the drain waits on: the transport counts its requests here. */
  readonly inflight: InFlightTracker
  /** earlyOffline's tracker (consumer ids seen and told), when enabled. */
  readonly tracker: ConsumerTracker | undefined
  probe(kind: ProbeKind): ProbeAnswer
  /** The Prometheus text. */
  renderMetrics(): string
  /** Startup failed (e.g. the server never listened): logged, in /status, /health/live 503. */
  fail(err: Error): void
  /** The server is gone: close the engine. */
  close(): Promise<void>
}

export type TransportFactory = (host: TransportHost) => Transport

/**
 * The transport-agnostic engine: one lifecycle with its options, registry
 * steps, early-offline tracker, metrics, termination message, observers, admin
 * listener, signal path and cluster responder, around one transport.
 */
export class Engine implements TransportHost {
  readonly options: ResolvedOptions
  readonly log: Logger
  readonly lifecycle: Lifecycle
  readonly inflight: InFlightTracker
  readonly tracker: ConsumerTracker | undefined
  readonly transport: Transport
  readonly events = new Emitter<{ goingAway: [GoingAway] }>()
  readonly handle: LameduckHandle
  readonly metrics: Metrics
  admin: AdminServer | null = null
  broken: Error | null = null
  readonly termination: TerminationMessage | null
  #undo: Array<() => void> = []
  #closed: Promise<void> | null = null
  #detachObservers: () => Promise<void> = async () => {}

  constructor (options: ResolvedOptions, transport: TransportFactory) {
    this.options = options
    this.log = options.logger ?? stderrLogger()
    for (const message of options.deprecations) this.log.warn({ lameduck: { deprecated: true } }, message)
    const inflight = this.inflight = new InFlightTracker()
    this.tracker = options.earlyOffline === false
      ? undefined
      : new ConsumerTracker({ windowMs: options.window.totalMs, quietMs: options.earlyOffline.quietMs, inflight })
    this.lifecycle = this.#createLifecycle(inflight)
    const termination = options.terminationMessage === false ? null : new TerminationMessage(this.lifecycle, this.log, options.terminationMessage.path)
    this.termination = termination
    if (termination !== null) this.#undo.push(() => { termination.detach() })
    this.metrics = new Metrics({ lifecycle: this.lifecycle, connections: () => this.transport.stats(), maxRequestMs: options.maxRequestMs })
    this.#undo.push(() => this.metrics.detach())
    this.#detachObservers = attachObservers(options.observers, { lifecycle: this.lifecycle, logger: this.log })
    this.transport = transport(this)
    this.#watchState()
    this.#installSignals()
    this.#startWhenReady()
    this.#undo.push(workerResponder(lifecycleBackend({ lifecycle: this.lifecycle, connections: () => this.transport.stats(), status: () => this.status(), metrics: () => this.metrics.render() }), () => this.handle.shutdown('cluster primary')))
    this.handle = createHandle(this)
  }

  #createLifecycle (inflight: InFlightTracker): Lifecycle {
    const o = this.options
    if (o.window.totalMs + o.maxRequestMs > o.shutdownTimeoutMs) {
      this.log.warn({ lameduck: { windowMs: o.window.totalMs, maxRequestMs: o.maxRequestMs, shutdownTimeoutMs: o.shutdownTimeoutMs } },
        'lameduck: window + maxRequestMs exceeds shutdownTimeoutMs: a slow request at the end of a drain would be cut')
    }
    return new Lifecycle({ ...o.lifecycle, earlyOffline: this.tracker, inflight, logger: this.log })
  }

  /** Registers the metrics into a prom-client registry and starts the admin listener; closes the engine on failure. */
  async start (): Promise<LameduckHandle> {
    try {
      if (this.options.metrics.registry !== undefined) await this.metrics.register(this.options.metrics.registry)
      await this.startAdmin()
    } catch (err) {
      await this.close()
      throw err
    }
    return this.handle
  }

  #goingAway (cause: GoingAway['cause']): void {
    this.transport.goingAway?.(cause)
    const event: GoingAway = { cause, upgraded: this.transport.longLived(), inflight: this.lifecycle.inflight.count }
    this.log.info({ lameduck: { goingAway: event } }, `lameduck: going away (${cause}): ${event.upgraded} upgraded connection(s) and ${event.inflight} request(s) open; the app's 'goingAway' listeners close them`)
    this.events.emit('goingAway', event)
  }

  #watchState (): void {
    let unwatchWindow: (() => void) | null = null
    let windowOver = false
    const onState: (...args: LifecycleEvents['state']) => void = (change) => {
      unwatchWindow?.()
      unwatchWindow = null
      // Once the window is over no consumer routes here: the app may end its WebSockets and streams.
      if (change.to === 'draining') {
        windowOver = false
        unwatchWindow = watchWindowEnd(this.lifecycle, this.tracker, () => { windowOver = true; this.#goingAway('window') })
      } else if (change.from === 'draining' && change.to === 'offline' && !windowOver) {
        this.#goingAway('window') // the drain got there first (same instant)
      }
      if (change.to === 'serving') this.broken = null // a startup run again by online() passed
      this.transport.onState(change)
      if (change.to === 'closing') this.#goingAway('closing')
    }
    const onOffline: (...args: LifecycleEvents['offline']) => void = (report) => {
      if (report.inflightAtEnd === 0 || report.outcome !== 'offline') return
      this.log.warn({ lameduck: { inflight: report.inflightAtEnd, maxRequestMs: this.options.maxRequestMs } },
        `lameduck: maxRequestMs (${this.options.maxRequestMs} ms) reached with ${report.inflightAtEnd} request(s) still in flight; offline without them (they go on until the app closes): ${this.transport.describeInflight()}`)
    }
    this.lifecycle.on('state', onState)
    this.lifecycle.on('offline', onOffline)
    this.#undo.push(() => { unwatchWindow?.(); this.lifecycle.off('state', onState); this.lifecycle.off('offline', onOffline) })
  }

  #installSignals (): void {
    const o = this.options
    const uninstall = installSignals({
      lifecycle: this.lifecycle,
      logger: this.log,
      signals: o.signals,
      shutdownTimeoutMs: o.shutdownTimeoutMs,
      connections: this.transport,
      close: () => this.closeAfterDrain(),
      inflightDescription: () => this.transport.describeInflight(),
      forced: (why) => { this.termination?.cut(why) },
      terminate: o.terminate
    })
    this.#undo.push(uninstall)
  }

  #startWhenReady (): void {
    const start = (): void => {
      if (this.lifecycle.state !== 'starting') return
      let base
      try {
        base = instanceBase(this.transport.address(), this.options)
      } catch (err) {
        this.fail(err as Error)
        return
      }
      this.#checkAdvertised(base.host)
      this.transport.checkAtStart?.()
      this.lifecycle.start(base).catch((err: Error) => { this.fail(err) })
    }
    this.#undo.push(this.transport.whenReady(start))
  }

  /** Startup failed: not registering, /health/live 503, the reason in /status (redacted: a step's error is the app's text). */
  fail (err: Error): void {
    this.broken = redactedErrorCopy(err)
    this.log.error({ err: this.broken, lameduck: { state: this.lifecycle.state } }, `lameduck: startup failed, not registering (/health/live now 503): ${this.broken.message}`)
  }

  /** Warns once when consumers could not reach the advertised host (e.g. listening on 127.0.0.1, advertising the pod IP). */
  #checkAdvertised (advertised: string): void {
    const address = this.transport.address()
    if (address === null) return
    const why = unreachableAdvertised(address.address, advertised)
    if (why !== null) this.log.warn({ lameduck: { listen: address.address, advertised } }, `lameduck: advertising ${advertised} to the registry, but ${why}`)
  }

  async startAdmin (): Promise<void> {
    if (this.options.admin === false) return
    this.admin = await startAdmin({
      ...this.options.admin,
      lifecycle: this.lifecycle,
      logger: this.log,
      connections: () => this.transport.stats(),
      status: () => this.status(),
      metrics: this.options.metrics.listener === false ? undefined : () => this.metrics.render()
    })
  }

  probe (kind: ProbeKind): ProbeAnswer {
    return probeAnswer(this.lifecycle, kind, this.broken, this.options.readinessWhileDraining)
  }

  renderMetrics (): string { return this.metrics.render() }

  /** The /status document, built by core's one builder (the admin protocol's single definition). */
  status (): LifecycleStatus {
    return buildStatus(this.lifecycle, {
      connections: this.transport.stats(),
      earlyOffline: this.tracker?.describe() ?? null,
      broken: this.broken?.message ?? null,
      shutdownTimeoutMs: this.options.shutdownTimeoutMs,
      adminUrl: this.admin?.url ?? null,
      readinessWhileDraining: this.options.readinessWhileDraining
    })
  }

  /** After the offline sequence: the transport lets connections go and closes the server. */
  closeAfterDrain (): Promise<void> {
    return this.transport.closeAfterDrain()
  }

  close (): Promise<void> {
    this.#closed ??= this.#close()
    return this.#closed
  }

  async #close (): Promise<void> {
    this.lifecycle.beginClose('closed') // while still attached: drain marks and the 'closing' goingAway
    this.transport.detach()
    for (const undo of this.#undo.splice(0).reverse()) undo()
    await this.admin?.close()
    await this.lifecycle.stopped('closed')
    // After 'stopped': an observer's last export (a span, a flush) sees the whole sequence.
    await this.#detachObservers()
    if (this.options.sidecar !== false) await this.options.sidecar.close()
  }
}

/** Whether the lifecycle is leaving (draining, offline, closing, ...): what the transports mark responses with. */
export { isLeaving }

function instanceBase (address: ListenAddress | null, options: ResolvedOptions) {
  const port = options.port ?? address?.port
  if (port === undefined) throw new Error('lameduck: cannot tell the listening port; set the port option')
  const host = options.host ?? defaultHost()
  return { id: options.instanceId ?? `${host}:${options.service}:${port}`, service: options.service, host, port, metadata: options.metadata }
}
