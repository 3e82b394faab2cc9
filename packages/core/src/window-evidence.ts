import { InvalidOptionError } from './errors.ts'
import { show, withMethods } from './validate.ts'
import { WINDOW_PARTS, type PropagationWindow, type WindowParts } from './windows.ts'

// Evidence for a window term: instead of a fixed guess for one part of the
// propagation window (the Kubernetes endpoint lag), something that can see the
// term end (this pod's own endpoint turning terminating in its EndpointSlice)
// says so. A collaborator of the drain, like the earlyOffline monitor: the
// lifecycle's state machine does not change.

/** What the evidence shows now. */
export type EvidenceReading =
  /** Watching; the term is not over yet (the shutdown budget bounds the wait). */
  | { state: 'pending', detail: string }
  /** Since `at` the term is over (e.g. the endpoint was seen terminating); `restMs` more are counted after it. */
  | { state: 'over', at: number, detail: string }
  /** The evidence cannot be had (no API access, no RBAC): the preset's part is used instead. */
  | { state: 'unavailable', detail: string }

export interface WindowEvidence {
  /** Names it in /status, reports and logs, e.g. 'kubernetes endpoint'. */
  readonly name: string
  /** The window part it stands in for, e.g. 'endpointLagMs'. */
  readonly part: keyof WindowParts
  /** Counted after the observation, for what it cannot see (kube-proxy's and an ingress's sync). */
  readonly restMs: number
  /** A drain starts at `now`. */
  begin(now: number): void
  read(now: number): EvidenceReading
  /** Calls `fn` when read() may have changed. Returns an unsubscribe function. */
  onChange(fn: () => void): () => void
  /** For /status: what it watches and what it saw. */
  describe?(): Record<string, unknown>
  /** Stops watching; the lifecycle calls it once stopped. */
  close?(): void | Promise<void>
}

/**
 * One term of the window and what ended it:
 * - `confirmed`: the registry confirmed the deregistration; the parts count from then.
 * - `none`: nothing was registered; the parts count from the drain's start.
 * - `observed`: the evidence showed it over (+ its restMs).
 * - `preset`: the evidence was unavailable; the preset's part counts as without evidence.
 * - `pending`: not known (yet): the shutdown budget bounds it.
 */
export interface WindowTerm {
  /** 'registry' (every part but the evidence's, counted from the deregistration; all of them without evidence) or the evidence's part. */
  term: 'registry' | keyof WindowParts
  by: 'confirmed' | 'none' | 'observed' | 'preset' | 'pending'
  /** When it ends (or ended); null while pending. */
  endsAt: number | null
  /** What showed it, for a human. */
  detail: string
}

export interface WindowPlan {
  /** When the window phase ends as things stand: the last term, never after `latestWindowEndAt`. */
  endsAt: number
  terms: WindowTerm[]
  /** Why it ends (ended) then: the term that ends last, or the budget. */
  reason: string
}

export interface WindowPlanInput {
  window: PropagationWindow
  startedAt: number
  /** The confirmation (or the start, with nothing registered); null while unconfirmed. */
  deregisteredAt: number | null
  nothingRegistered: boolean
  latestWindowEndAt: number
  evidence: WindowEvidence | undefined
  reading: EvidenceReading | null
}

const s = (ms: number): string => `${Math.round(ms) / 1000} s`

/** The window's terms and its end, from the deregistration and the evidence. */
export function planWindow (i: WindowPlanInput): WindowPlan {
  const e = i.evidence
  const partMs = e === undefined ? 0 : i.window.parts[e.part]
  const registryMs = i.window.totalMs - partMs
  const from = i.nothingRegistered ? 'none' : 'confirmed'
  const registry: WindowTerm = i.deregisteredAt === null
    ? { term: 'registry', by: 'pending', endsAt: null, detail: 'deregistration not confirmed yet' }
    : { term: 'registry', by: from, endsAt: i.deregisteredAt + registryMs, detail: `${from === 'none' ? 'nothing registered: from the start' : 'deregistration confirmed'} + ${s(registryMs)}${e === undefined ? '' : ` (the window without ${e.part})`}` }
  const terms = [registry]
  if (e !== undefined && i.reading !== null) terms.push(evidenceTerm(e, i.reading, i.deregisteredAt, i.window.totalMs))
  let endsAt = Number.NEGATIVE_INFINITY
  let last: WindowTerm = registry
  for (const t of terms) {
    const at = t.endsAt ?? Number.POSITIVE_INFINITY
    if (at > endsAt) { endsAt = at; last = t }
  }
  if (endsAt > i.latestWindowEndAt) {
    const why = e === undefined || last.term === 'registry' ? 'deregistration unconfirmed' : last.detail
    return { endsAt: i.latestWindowEndAt, terms, reason: `shutdown budget reached, ${why}` }
  }
  return { endsAt, terms, reason: e === undefined ? 'window elapsed' : `window elapsed: ${last.term === 'registry' ? 'registry term' : `${last.term} ${last.by}`} last (${last.detail})` }
}

function evidenceTerm (e: WindowEvidence, r: EvidenceReading, deregisteredAt: number | null, totalMs: number): WindowTerm {
  switch (r.state) {
    case 'over': return { term: e.part, by: 'observed', endsAt: r.at + e.restMs, detail: `${e.name}: ${r.detail} + ${s(e.restMs)} rest` }
    case 'pending': return { term: e.part, by: 'pending', endsAt: null, detail: `${e.name}: ${r.detail}` }
    case 'unavailable': return {
      term: e.part,
      by: 'preset',
      // As without evidence: the whole preset window from the deregistration.
      endsAt: deregisteredAt === null ? null : deregisteredAt + totalMs,
      detail: `${e.name} unavailable (${r.detail}): the preset's ${e.part} counted in the ${s(totalMs)} window`
    }
  }
}

/** The evidence in /status: what it stands in for, what it reads now, and its own describe(). */
export type WindowEvidenceStatus = Record<string, unknown> & { name: string, part: keyof WindowParts, restMs: number, reading: EvidenceReading }

export function evidenceStatus (e: WindowEvidence, now: number): WindowEvidenceStatus {
  let own: Record<string, unknown> = {}
  let reading: EvidenceReading
  try { reading = e.read(now) } catch (err) { reading = { state: 'unavailable', detail: `read() threw: ${(err as Error)?.message ?? String(err)}` } }
  try { own = e.describe?.() ?? {} } catch (err) { own = { error: `describe() threw: ${(err as Error)?.message ?? String(err)}` } }
  return { ...own, name: e.name, part: e.part, restMs: e.restMs, reading }
}

/** Validates a `windowEvidence` option at the edge. */
export function windowEvidence (option: string, value: unknown): WindowEvidence | undefined {
  if (value === undefined) return undefined
  const e = withMethods<WindowEvidence>(option, value, ['begin', 'read', 'onChange'], 'window evidence, e.g. observedWindow() from @lameduck/kubernetes,')
  if (typeof e.name !== 'string' || e.name === '') throw new InvalidOptionError(`${option}.name`, `must be a non-empty string, got ${show(e.name)}`)
  if (!(WINDOW_PARTS as readonly string[]).includes(e.part)) throw new InvalidOptionError(`${option}.part`, `must be one of ${WINDOW_PARTS.join(', ')}, got ${show(e.part)}`)
  if (typeof e.restMs !== 'number' || !Number.isFinite(e.restMs) || e.restMs < 0) throw new InvalidOptionError(`${option}.restMs`, `must be a non-negative number of ms, got ${show(e.restMs)}`)
  return e
}
