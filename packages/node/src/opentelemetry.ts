import type { Attributes, MeterProvider, Tracer, TracerProvider } from '@opentelemetry/api'
import { InvalidOptionError, checkKeys, duration, fn, record, show, type Lifecycle, type LifecycleObserver, type Logger, type ObserverContext } from '@lameduck/core'
import { registeredMeterProvider, registeredTracerProvider } from './otel-global.ts'
import { OtelLifecycleMetrics } from './otel-metrics.ts'
import { OtelLifecycleSpans } from './otel-spans.ts'
import { ATTR, SCOPE, kubernetesAttributes } from './otel-names.ts'

export interface OpenTelemetryOptions {
  /** Default: the one the app registered (`trace.setGlobalTracerProvider()`, an SDK's start()), read as each sequence starts. */
  tracerProvider?: TracerProvider
  /** Default: the one the app registered (`metrics.setGlobalMeterProvider()`), from the first state change it is there. */
  meterProvider?: MeterProvider
  /**
   * The app's SDK shutdown (e.g. `() => sdk.shutdown()`), run as the last step
   * of a shutdown so the final spans and metrics are exported before the process
   * ends, bounded by `flushTimeoutMs`.
   */
  flush?: () => Promise<unknown>
  /** Bound on `flush`, reserved inside shutdownTimeoutMs (`lameduck plan --telemetry-flush-ms`). Default 2 000. */
  flushTimeoutMs?: number
}

export interface ResolvedOpenTelemetry {
  tracerProvider: TracerProvider | undefined
  meterProvider: MeterProvider | undefined
  flush: (() => Promise<unknown>) | undefined
  /** 0 without a flush: nothing to reserve. */
  flushTimeoutMs: number
}

export const DEFAULT_FLUSH_TIMEOUT_MS = 2_000

/** Checks the `openTelemetry` option; false turns the observer off. */
export function resolveOpenTelemetry (value: OpenTelemetryOptions | false | undefined, at = 'openTelemetry'): ResolvedOpenTelemetry | false {
  if (value === false) return false
  const o = record(at, value ?? {}, '{ flush: () => sdk.shutdown(), flushTimeoutMs: 2000 }, or false') as OpenTelemetryOptions
  checkKeys(at, o, { tracerProvider: true, meterProvider: true, flush: true, flushTimeoutMs: true })
  if (o.tracerProvider !== undefined && typeof (o.tracerProvider as { getTracer?: unknown })?.getTracer !== 'function') {
    throw new InvalidOptionError(`${at}.tracerProvider`, `must be an OpenTelemetry TracerProvider (with getTracer()), got ${show(o.tracerProvider)}`)
  }
  if (o.meterProvider !== undefined && typeof (o.meterProvider as { getMeter?: unknown })?.getMeter !== 'function') {
    throw new InvalidOptionError(`${at}.meterProvider`, `must be an OpenTelemetry MeterProvider (with getMeter()), got ${show(o.meterProvider)}`)
  }
  const flush = o.flush === undefined ? undefined : fn<() => Promise<unknown>>(`${at}.flush`, o.flush, '() => sdk.shutdown()')
  const flushTimeoutMs = duration(`${at}.flushTimeoutMs`, o.flushTimeoutMs, DEFAULT_FLUSH_TIMEOUT_MS)
  if (o.flushTimeoutMs !== undefined && flush === undefined) throw new InvalidOptionError(`${at}.flushTimeoutMs`, 'bounds the flush step, which needs openTelemetry.flush (e.g. () => sdk.shutdown())')
  return { tracerProvider: o.tracerProvider, meterProvider: o.meterProvider, flush, flushTimeoutMs: flush === undefined ? 0 : flushTimeoutMs }
}

/**
 * lameduck's OpenTelemetry output as a lifecycle observer: the lifecycle
 * metrics and a span per offline and online sequence, through
 * `@opentelemetry/api` only (no SDK is a dependency: without one it is all
 * no-ops). finish() ends what is still open, then runs the app's flush once,
 * bounded: a hanging exporter is reported, never waited for past the bound.
 * Its detach (at the engine's close) is finish() too; so is the end of the
 * signal path, before the process exits (see telemetryWiring()).
 */
export class OpenTelemetryObserver implements LifecycleObserver {
  readonly name = 'opentelemetry'
  readonly #o: ResolvedOpenTelemetry
  readonly #service: string | undefined
  #attached: { spans: OtelLifecycleSpans, metrics: OtelLifecycleMetrics | null, logger: Logger, lifecycle: Lifecycle } | null = null
  /** The tracer, with the provider it came from: a provider registered later gets its own. */
  #tracer: { provider: TracerProvider, tracer: Tracer } | null = null
  /** Binds the metrics once a meter provider is there (the app may register its SDK after attach()). */
  #bindMetrics: (() => void) | null = null
  #finished: Promise<void> | null = null
  /** The logger attach() was given (the engine's), for the exit after the flush. */
  logger: Logger | null = null

  constructor (o: ResolvedOpenTelemetry, service?: string) {
    this.#o = o
    this.#service = service
  }

  attach ({ lifecycle, logger }: ObserverContext): () => Promise<void> {
    const k8s = kubernetesAttributes()
    const service = this.#service
    const base = (): Attributes => ({
      ...k8s,
      ...(service === undefined ? {} : { [ATTR.service]: service }),
      ...(lifecycle.instance === null ? {} : { [ATTR.instanceId]: lifecycle.instance.id }),
      'lameduck.window_ms': lifecycle.window.totalMs
    })
    this.logger = logger
    const attached = this.#attached = { metrics: null as OtelLifecycleMetrics | null, spans: new OtelLifecycleSpans(() => this.#currentTracer(), lifecycle, base), logger, lifecycle }
    attached.metrics = this.#meterOn(lifecycle)
    if (attached.metrics === null) {
      const bind = this.#bindMetrics = () => {
        attached.metrics = this.#meterOn(lifecycle)
        if (attached.metrics !== null) this.#stopBinding(lifecycle)
      }
      lifecycle.on('state', bind)
    }
    return async () => { await this.finish('close') }
  }

  /** The lifecycle metrics on the meter provider given or registered, or null while there is none. */
  #meterOn (lifecycle: Lifecycle): OtelLifecycleMetrics | null {
    const provider = this.#o.meterProvider ?? registeredMeterProvider()
    return provider === undefined ? null : new OtelLifecycleMetrics(provider.getMeter(SCOPE), lifecycle)
  }

  #stopBinding (lifecycle: Lifecycle): void {
    if (this.#bindMetrics !== null) lifecycle.off('state', this.#bindMetrics)
    this.#bindMetrics = null
  }

  /** The tracer for a sequence starting now, or null without a provider (no span). */
  #currentTracer (): Tracer | null {
    const provider = this.#o.tracerProvider ?? registeredTracerProvider()
    if (provider === undefined) return null
    if (this.#tracer?.provider !== provider) this.#tracer = { provider, tracer: provider.getTracer(SCOPE) }
    return this.#tracer.tracer
  }

  /** Ends the open spans (saying why), stops observing, and flushes once, bounded. */
  finish (why: string): Promise<void> {
    this.#finished ??= (async () => {
      const a = this.#attached
      if (a === null) return
      a.spans.detach(why)
      this.#stopBinding(a.lifecycle)
      // The gauges keep their callback through the flush: its last collection reads the final state.
      try {
        if (this.#o.flush !== undefined) await boundedFlush(this.#o.flush, this.#o.flushTimeoutMs, a.logger)
      } finally {
        a.metrics?.detach()
      }
    })()
    return this.#finished
  }
}

/** The observer, from openTelemetry() options (attach()'s `openTelemetry` option builds it for you). */
export function openTelemetry (input: OpenTelemetryOptions = {}, service?: string): OpenTelemetryObserver {
  const o = resolveOpenTelemetry(input)
  if (o === false) throw new InvalidOptionError('openTelemetry', 'openTelemetry() builds the observer; leave it out (or pass openTelemetry: false to attach()) to turn it off')
  return new OpenTelemetryObserver(o, service)
}

/** Runs the app's flush, at most `ms`; a failure or a hang is logged once, never thrown. */
export async function boundedFlush (flush: () => Promise<unknown>, ms: number, logger: Logger): Promise<'flushed' | 'failed' | 'timeout'> {
  let timer: NodeJS.Timeout | undefined
  const started = Date.now()
  const bound = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => { resolve('timeout') }, ms) })
  const run = (async () => { await flush(); return 'flushed' as const })().catch((err: unknown) => err instanceof Error ? err : new Error(String(err)))
  const result = await Promise.race([run, bound])
  clearTimeout(timer)
  if (result === 'timeout') {
    logger.warn({ lameduck: { openTelemetry: { flushTimeoutMs: ms } } }, `lameduck: the OpenTelemetry flush did not finish within flushTimeoutMs (${ms} ms; a hanging or unreachable exporter?): not waiting for it, the last spans and metrics may be lost`)
    return 'timeout'
  }
  if (result instanceof Error) {
    logger.warn({ lameduck: { openTelemetry: { error: result.message } } }, `lameduck: the OpenTelemetry flush failed after ${Date.now() - started} ms: ${result.message}`)
    return 'failed'
  }
  logger.info({ lameduck: { openTelemetry: { flushMs: Date.now() - started } } }, `lameduck: OpenTelemetry flushed in ${Date.now() - started} ms`)
  return 'flushed'
}
