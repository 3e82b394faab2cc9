import type { Attributes, Span, SpanStatusCode, Tracer } from '@opentelemetry/api'
import { redactText, type Lifecycle, type LifecycleEvents, type OfflineReport } from '@lameduck/core'
import { ATTR, SPAN } from './otel-names.ts'

type Handlers = { [E in keyof LifecycleEvents]?: (...args: LifecycleEvents[E]) => void }

/** SpanStatusCode.ERROR (OTLP's STATUS_CODE_ERROR), without loading the API for one constant. */
const ERROR = 2 as SpanStatusCode.ERROR

/** A report's numbers as span attributes. */
export function reportAttributes (report: OfflineReport): Attributes {
  const d = report.deregistration
  const attributes: Attributes = {
    [ATTR.outcome]: report.outcome,
    [ATTR.reason]: redactText(report.reason),
    [ATTR.deregistration]: d.state,
    'lameduck.deregistration.attempts': d.attempts,
    'lameduck.offline.total_ms': report.totalMs,
    'lameduck.offline.window_ms': report.windowMs,
    'lameduck.offline.window_reached': report.windowEndedAt !== null,
    'lameduck.offline.ended_early': report.endedEarly,
    'lameduck.offline.sidecar_ms': report.sidecarMs,
    'lameduck.offline.inflight_wait_ms': report.inflightWaitMs,
    'lameduck.offline.requests_while_draining': report.requestsWhileDraining,
    'lameduck.offline.inflight_at_end': report.inflightAtEnd,
    'lameduck.offline.problems': report.problems.length
  }
  if (d.lastError !== null) attributes['lameduck.deregistration.last_error'] = redactText(d.lastError)
  return attributes
}

/** Why the span is an error, or null: a bound cut requests, or the registry may still list the instance. */
function failure (report: OfflineReport): string | null {
  if (report.outcome === 'cut') return `cut short: ${report.reason}`
  if (report.inflightAtEnd > 0) return `maxRequestMs reached with ${report.inflightAtEnd} request(s) in flight`
  if (report.deregistration.state === 'unconfirmed') return 'deregistration not confirmed: consumers may still route here'
  return null
}

/**
 * One span per offline sequence (from draining to the report) and one per
 * online sequence (from waiting or registering to serving), with an event for
 * each phase, registration and problem at the time it happened. Spans are
 * roots: a drain belongs to no request.
 */
export class OtelLifecycleSpans {
  /** The tracer as a sequence starts (null: no provider, no span for it). */
  readonly #tracer: () => Tracer | null
  readonly #lifecycle: Lifecycle
  readonly #base: () => Attributes
  #offline: Span | null = null
  #online: Span | null = null
  readonly #handlers: Handlers

  constructor (tracer: () => Tracer | null, lifecycle: Lifecycle, base: () => Attributes) {
    this.#tracer = tracer
    this.#lifecycle = lifecycle
    this.#base = base
    this.#handlers = {
      state: (change) => { this.#onState(change.from, change.to, change.at, change.reason) },
      phase: (change) => {
        this.#offline?.addEvent(`lameduck.drain.${change.phase}`, { [ATTR.phase]: change.phase, [ATTR.previous]: change.previous ?? 'none', [ATTR.reason]: redactText(change.reason) }, change.at)
      },
      deregistered: (instance) => { this.#offline?.addEvent('lameduck.deregistered', { [ATTR.instanceId]: instance.id }) },
      offline: (report) => { this.#endOffline(report) },
      problem: (p) => {
        const attributes = { 'lameduck.problem.step': p.step, 'lameduck.problem.message': redactText(p.message) }
        ;(this.#offline ?? this.#online)?.addEvent('lameduck.problem', attributes, p.at)
      }
    }
    for (const [event, handler] of Object.entries(this.#handlers)) lifecycle.on(event as 'state', handler as NonNullable<Handlers['state']>)
  }

  #start (name: string, at: number, reason: string): Span | null {
    return this.#tracer()?.startSpan(name, { root: true, startTime: at, attributes: { ...this.#base(), [ATTR.reason]: redactText(reason) } }) ?? null
  }

  #onState (from: string, to: string, at: number, reason: string): void {
    // The lifecycle says 'registered' just after 'serving': the event goes in before the span ends.
    const id = this.#lifecycle.instance?.id
    if (to === 'serving' && id !== undefined) this.#online?.addEvent('lameduck.registered', { [ATTR.instanceId]: id }, at)
    this.#online?.addEvent(`lameduck.state.${to}`, { [ATTR.state]: to, 'lameduck.previous_state': from, [ATTR.reason]: redactText(reason) }, at)
    if (to === 'draining') this.#offline ??= this.#start(SPAN.offline, at, reason)
    // Online: from start (waiting), or online() after an offline (registering or waiting again).
    if ((to === 'waiting' || to === 'registering') && this.#online === null) {
      this.#online = this.#start(SPAN.online, at, reason)
      this.#online?.addEvent(`lameduck.state.${to}`, { [ATTR.state]: to, 'lameduck.previous_state': from, [ATTR.reason]: redactText(reason) }, at)
    }
    if (this.#online !== null && (to === 'serving' || to === 'draining' || to === 'offline' || to === 'closing')) {
      const span = this.#online
      this.#online = null
      span.setAttribute('lameduck.online.outcome', to === 'serving' ? 'serving' : `left (${to})`)
      if (to !== 'serving') span.setStatus({ code: ERROR, message: `never served: ${to} (${redactText(reason)})` })
      span.end(at)
    }
  }

  #endOffline (report: OfflineReport): void {
    // A report without a drain (e.g. 'skipped': never registered) still gets its span, after the fact.
    const span = this.#offline ?? this.#start(SPAN.offline, report.startedAt, report.reason)
    this.#offline = null
    if (span === null) return
    span.setAttributes(reportAttributes(report))
    // Each term of the window and the evidence that ended it (the registry's confirmation, an observed endpoint, the preset).
    for (const term of report.windowTerms ?? []) {
      span.addEvent('lameduck.window.term', { 'lameduck.window.term': term.term, 'lameduck.window.ended_by': term.by, 'lameduck.window.detail': redactText(term.detail) }, term.endsAt ?? report.endedAt)
    }
    span.addEvent('lameduck.offline', { [ATTR.outcome]: report.outcome }, report.endedAt)
    const why = failure(report)
    if (why !== null) span.setStatus({ code: ERROR, message: why })
    span.end(report.endedAt)
  }

  /** Ends what is still open (the process is closing mid-sequence) and stops listening. */
  detach (why: string): void {
    for (const [event, handler] of Object.entries(this.#handlers)) this.#lifecycle.off(event as 'state', handler as NonNullable<Handlers['state']>)
    const now = this.#lifecycle.clock.now()
    for (const span of [this.#offline, this.#online]) {
      if (span === null) continue
      span.addEvent('lameduck.closed', { [ATTR.reason]: why, [ATTR.state]: this.#lifecycle.state }, now)
      span.setStatus({ code: ERROR, message: `ended by ${why} in state ${this.#lifecycle.state}` })
      span.end(now)
    }
    this.#offline = null
    this.#online = null
  }
}
