import type { BatchObservableCallback, Counter, Histogram, Meter, Observable } from '@opentelemetry/api'
import { STATES, type Lifecycle, type LifecycleEvents } from '@lameduck/core'
import { DURATION_BUCKETS } from './metrics.ts'
import { ATTR, METRIC } from './otel-names.ts'

/**
 * The lifecycle's metrics as OpenTelemetry instruments. The gauges are read in
 * one batch callback at collection time and the counters move once per offline
 * sequence: nothing is touched per request. Without an SDK the meter is the
 * API's no-op one and all of this costs nothing.
 */
export class OtelLifecycleMetrics {
  readonly #meter: Meter
  readonly #lifecycle: Lifecycle
  readonly #forcedCloses: Counter
  readonly #attempts: Counter
  readonly #duration: Histogram
  readonly #observables: Observable[]
  readonly #collect: BatchObservableCallback
  readonly #onOffline: (...args: LifecycleEvents['offline']) => void
  /** Requests served while draining by the drains that have ended. */
  #drainedBefore = 0

  constructor (meter: Meter, lifecycle: Lifecycle) {
    this.#meter = meter
    this.#lifecycle = lifecycle
    const state = meter.createObservableGauge(METRIC.state, { description: 'Lifecycle state: 1 for the current one (attribute lameduck.state).', unit: '1' })
    const active = meter.createObservableUpDownCounter(METRIC.active, { description: 'Requests being served now.', unit: '{request}' })
    const whileDraining = meter.createObservableCounter(METRIC.whileDraining, { description: 'Requests served while draining, over every drain.', unit: '{request}' })
    this.#forcedCloses = meter.createCounter(METRIC.forcedCloses, { description: 'Requests still in flight when a bound ended a drain (lameduck.bound: max_request or shutdown).', unit: '{request}' })
    this.#attempts = meter.createCounter(METRIC.deregistrationAttempts, { description: 'Deregistration calls sent, by how the drain\'s deregistration ended.', unit: '{attempt}' })
    this.#duration = meter.createHistogram(METRIC.offlineDuration, {
      description: 'Duration of each offline sequence (deregistration, window, sidecar, in-flight wait), by outcome.',
      unit: 's',
      advice: { explicitBucketBoundaries: [...DURATION_BUCKETS] }
    })
    this.#observables = [state, active, whileDraining]
    this.#collect = (result) => {
      const now = lifecycle.state
      for (const s of STATES) result.observe(state, s === now ? 1 : 0, { [ATTR.state]: s })
      result.observe(active, lifecycle.inflight.count)
      const live = now === 'draining' ? lifecycle.drain?.requestsWhileDraining ?? 0 : 0
      result.observe(whileDraining, this.#drainedBefore + live)
    }
    meter.addBatchObservableCallback(this.#collect, this.#observables)
    this.#onOffline = (report) => {
      this.#drainedBefore += report.requestsWhileDraining
      const outcome = { [ATTR.outcome]: report.outcome }
      this.#duration.record(report.totalMs / 1000, outcome)
      this.#attempts.add(report.deregistration.attempts, { [ATTR.deregistration]: report.deregistration.state })
      if (report.inflightAtEnd > 0) this.#forcedCloses.add(report.inflightAtEnd, { [ATTR.bound]: report.outcome === 'cut' ? 'shutdown' : 'max_request' })
    }
    lifecycle.on('offline', this.#onOffline)
  }

  detach (): void {
    this.#lifecycle.off('offline', this.#onOffline)
    this.#meter.removeBatchObservableCallback(this.#collect, this.#observables)
  }
}
