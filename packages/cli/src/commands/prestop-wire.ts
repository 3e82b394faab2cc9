// What prestop reads off the wire, read defensively: the admin listener (or whatever
// answers at --admin: an older app, a proxy, something else) may send any JSON. Each
// field is kept only with the type prestop prints it as, and every string is made
// printable: app and registry text (a readiness error, a registry's message) reaches
// a terminal or kubelet's event log, where an escape sequence would rewrite the screen.
import { truncateText } from '@lameduck/core'
import type { StatusView } from '../drain-progress.ts'

/** Longest piece of app or registry text printed (one problem, one error message). */
const MAX_TEXT_CHARS = 500
/** Problems printed from one report; the rest are counted. */
export const MAX_PROBLEMS = 20

// C0 controls (ESC starts terminal sequences, CR and BS overwrite the line), DEL, C1
// (0x9b is a one-byte CSI), and the Unicode line separators and bidi controls, which
// break or reorder what a person reads.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

/** `line` with each control character shown as a `\uXXXX` escape. */
export function escapeControls (line: string): string {
  return line.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** App or registry text cut to a printable length, control characters escaped. */
export function printable (text: string): string {
  return escapeControls(truncateText(text, MAX_TEXT_CHARS))
}

/** The drain report fields prestop prints, each present only when well typed. */
export interface ReportView {
  outcome?: string
  reason?: string
  endedAt?: number
  totalMs?: number
  windowMs?: number
  sidecarMs?: number
  inflightWaitMs?: number
  requestsWhileDraining?: number
  deregistration?: { state?: string, attempts?: number, lastError?: string }
  problems: Array<{ step: string, message: string }>
  /** Problems beyond MAX_PROBLEMS, not listed. */
  moreProblems: number
}

type Json = Record<string, unknown>

const record = (v: unknown): Json | undefined => typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Json : undefined
const text = (v: unknown): string | undefined => typeof v === 'string' ? printable(v) : undefined
const num = (v: unknown): number | undefined => typeof v === 'number' && Number.isFinite(v) ? v : undefined
/** A time a Date can hold (toISOString throws past ±8.64e15 ms). */
const time = (v: unknown): number | undefined => { const n = num(v); return n !== undefined && Math.abs(n) <= 8.64e15 ? n : undefined }

/** One entry of `report.problems`: `{ step, message }` from lameduck; anything else is shown, not trusted. */
function problem (item: unknown): { step: string, message: string } {
  const p = record(item)
  if (p !== undefined) return { step: text(p.step) ?? 'drain', message: text(p.message) ?? '' }
  if (typeof item === 'string') return { step: 'drain', message: printable(item) }
  return { step: 'drain', message: `(unreadable entry: ${printable(String(JSON.stringify(item)))})` }
}

export function readReport (value: unknown): ReportView {
  const r = record(value) ?? {}
  const d = record(r.deregistration)
  const problems = Array.isArray(r.problems) ? r.problems : []
  return {
    outcome: text(r.outcome),
    reason: text(r.reason),
    endedAt: time(r.endedAt),
    totalMs: num(r.totalMs),
    windowMs: num(r.windowMs),
    sidecarMs: num(r.sidecarMs),
    inflightWaitMs: num(r.inflightWaitMs),
    requestsWhileDraining: num(r.requestsWhileDraining),
    deregistration: d === undefined ? undefined : { state: text(d.state), attempts: num(d.attempts), lastError: text(d.lastError) },
    problems: problems.slice(0, MAX_PROBLEMS).map(problem),
    moreProblems: Math.max(0, problems.length - MAX_PROBLEMS)
  }
}

/** A /status answer as the progress display reads it, or undefined without a state. */
export function readStatus (value: unknown): StatusView | undefined {
  const s = record(value)
  const state = text(s?.state)
  if (s === undefined || state === undefined) return undefined
  const view: Json = { state }
  const inflight = num(s.inflight)
  if (inflight !== undefined) view.inflight = inflight
  const total = num(record(s.window)?.totalMs)
  if (total !== undefined) view.window = { totalMs: total }
  const d = record(s.drain)
  if (d !== undefined) {
    const dereg = record(d.deregistration)
    view.drain = dropUndefined({
      phase: text(d.phase),
      startedAt: time(d.startedAt),
      windowEndsAt: time(d.windowEndsAt),
      requestsWhileDraining: num(d.requestsWhileDraining),
      earlyOfflinePending: text(d.earlyOfflinePending),
      // Shown as "(N attempts, last error: ...)": only with a count.
      deregistration: num(dereg?.attempts) === undefined ? undefined : dropUndefined({ attempts: num(dereg!.attempts), lastError: text(dereg!.lastError) })
    })
  }
  return view as unknown as StatusView
}

function dropUndefined (o: Json): Json {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k]
  return o
}
