import { setInterval as every } from 'node:timers'
import { EXIT, type Command, type CommandContext } from '../command.ts'
import { formatSeconds, parseFlags, secondsFlag, stringFlag, urlFlag } from '../args.ts'
import { createProgress, type StatusView } from '../drain-progress.ts'
import { AnswerTooLargeError, call, createAgent, networkFailure, type HttpAnswer } from '../http.ts'
import { DEFAULT_ADMIN_URL, isStopping, sleep, systemClock } from '@lameduck/core'
import { escapeControls, printable, readReport, readStatus, type ReportView } from './prestop-wire.ts'

export { DEFAULT_ADMIN_URL }
const LABEL = 'lameduck prestop'
const POLL_MS = 1_000
const REDRAW_MS = 200

const help = `Usage: lameduck prestop [--admin URL] [--token T] [--timeout S]

The app container's preStop hook. Starts the offline sequence on the app's
lameduck admin listener (POST /offline?wait=true) and blocks until the app is
offline: deregistered, the propagation window passed, nothing in flight.
While it waits it shows progress from GET /status: a bar with the window
countdown and the in-flight count on a terminal, one line a second otherwise.

Options:
  --admin URL    admin listener of @lameduck/fastify
                 (default $LAMEDUCK_ADMIN, else ${DEFAULT_ADMIN_URL})
  --token T      admin bearer token (default $LAMEDUCK_TOKEN)
  --timeout S    give up after S seconds (at most 86400); 0 waits until the app
                 is offline and leaves the bound to terminationGracePeriodSeconds
                 (default 0)
  -h, --help     show this help

Exit codes:
  0  the app is offline (also when it was already offline or stopping)
  1  not offline: cancelled by /online, cut short, or --timeout passed
  2  bad flags (--timeout above 86400 s included)
  3  the admin listener is unreachable (app not running, wrong --admin)
  4  the token was rejected (401/403)
  5  offline, but the registry never confirmed the deregistration: consumers
     may still route to the app (the report says deregistration: unconfirmed)

Example (container spec):
  lifecycle:
    preStop:
      exec:
        command: ["lameduck", "prestop"]
`

/** One run's settings and what it has seen so far. */
interface Prestop {
  admin: URL
  token: string | undefined
  timeoutMs: number
  offlineUrl: URL
  statusUrl: URL
  progress: ReturnType<typeof createProgress>
  agent: ReturnType<typeof createAgent>
  /** The caller's signal, plus --timeout. */
  signal: AbortSignal
  timeout: AbortSignal | undefined
  say: (line: string) => void
  fail: (code: number, line: string) => number
  /** The last /status answer. */
  last: StatusView | undefined
  wasOffline: boolean
  sentAt: number
}

function setup (ctx: CommandContext): Prestop {
  const { values } = parseFlags(ctx.argv, {
    admin: { type: 'string' },
    token: { type: 'string' },
    timeout: { type: 'string' }
  })
  const admin = urlFlag('admin', stringFlag(values, 'admin') ?? (ctx.env.LAMEDUCK_ADMIN || DEFAULT_ADMIN_URL))
  const timeoutMs = secondsFlag(values, 'timeout', 0)
  const progress = createProgress({ stream: ctx.stdout, label: LABEL })
  const timeout = timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined
  return {
    admin,
    token: stringFlag(values, 'token') ?? (ctx.env.LAMEDUCK_TOKEN || undefined),
    timeoutMs,
    offlineUrl: new URL('offline?wait=true', withSlash(admin)),
    statusUrl: new URL('status', withSlash(admin)),
    progress,
    agent: createAgent(),
    signal: timeout === undefined ? ctx.signal : AbortSignal.any([ctx.signal, timeout]),
    timeout,
    // Lines carry app and registry text (read through prestop-wire.ts); escaped once more as they are printed.
    say: (line) => { progress.clear(); ctx.stdout.write(`${LABEL}: ${escapeControls(line)}\n`) },
    fail: (code, line) => { progress.clear(); ctx.stderr.write(`${LABEL}: ${escapeControls(line)}\n`); return code },
    last: undefined,
    wasOffline: false,
    sentAt: 0
  }
}

async function run (ctx: CommandContext): Promise<number> {
  const p = setup(ctx)
  const { agent, offlineUrl, statusUrl, token, signal } = p
  const polling = new AbortController()
  if (!p.progress.tty) p.say(`taking the app offline: POST ${offlineUrl.href}`)
  // Already offline before this hook? /status says so; a report that ended before the POST is an earlier drain's too.
  p.wasOffline = await call(agent, statusUrl, { token, signal, timeoutMs: 2_000 }).then((a) => readStatus(a.json)?.state === 'offline', () => false)
  p.sentAt = Date.now()
  const poller = poll(p, AbortSignal.any([signal, polling.signal]))
  let answer: HttpAnswer
  try {
    answer = await call(agent, offlineUrl, { method: 'POST', token, signal, timeoutMs: 0 })
  } catch (err) {
    polling.abort()
    await poller
    await agent.destroy()
    return notAnswered(p, ctx, err)
  }
  polling.abort()
  await poller
  await agent.destroy()
  return outcome(p, answer)
}

// The POST blocks for the whole drain; /status is polled beside it for progress.
async function poll (p: Prestop, stop: AbortSignal): Promise<void> {
  const { progress } = p
  const redraw = progress.tty ? every(() => { if (p.last) progress.show(p.last) }, REDRAW_MS).unref() : undefined
  try {
    while (!stop.aborted) {
      await sleep(systemClock, POLL_MS, stop, { resolveOnAbort: true })
      if (stop.aborted) break
      try {
        const answer = await call(p.agent, p.statusUrl, { token: p.token, signal: stop, timeoutMs: 2_000 })
        const status = answer.status === 200 ? readStatus(answer.json) : undefined
        if (status !== undefined) {
          p.last = status
          progress.show(status)
        }
      } catch {} // the POST reports what went wrong
    }
  } finally {
    if (redraw) clearInterval(redraw)
  }
}

/** The POST failed without an answer: timed out, interrupted, the app went away, or never was there. */
function notAnswered (p: Prestop, ctx: CommandContext, err: unknown): number {
  const { fail, say, last, admin } = p
  const failure = networkFailure(err, p.offlineUrl)
  if (p.timeout?.aborted) {
    return fail(EXIT.FAILED, `not offline after ${formatSeconds(p.timeoutMs)}${last ? ` (${summary(last)})` : ''}: the app keeps draining; raise --timeout, or check ${p.statusUrl.href}`)
  }
  if (ctx.signal.aborted) return fail(EXIT.FAILED, 'interrupted before the app was offline (it keeps draining on its own)')
  if (err instanceof AnswerTooLargeError) return fail(EXIT.FAILED, `${err.message}. The app may be draining: check ${p.statusUrl.href}`)
  if (failure.kind === 'closed' && last !== undefined) {
    if (isStopping(last.state)) { say(`the app stopped after going ${last.state}`); return EXIT.OK }
    return fail(EXIT.FAILED, `the app closed the connection while ${summary(last)}: it stopped before the drain ended (crashed, or killed?)`)
  }
  if (failure.kind === 'refused') {
    return fail(EXIT.UNREACHABLE, `${failure.reason}. Is the app running, and is admin.port right? The plugin's admin listener defaults to ${DEFAULT_ADMIN_URL}; pass --admin URL if admin.port or admin.host differ`)
  }
  return fail(EXIT.UNREACHABLE, `cannot reach the admin listener at ${admin.origin}: ${failure.reason}. Check --admin (the plugin's admin.host and admin.port)`)
}

// 200: the drain ended. Its report says how; an unconfirmed deregistration is its own exit code.
function reported (p: Prestop, res: HttpAnswer, state: string | undefined): number {
  const { say, fail, statusUrl } = p
  const report = readReport(res.json?.report)
  for (const problem of report.problems) say(`problem: ${problem.step}: ${problem.message}`)
  if (report.moreProblems > 0) say(`and ${report.moreProblems} more problems: see ${statusUrl.href}`)
  if (report.outcome === 'cancelled') return fail(EXIT.FAILED, `the drain was cancelled: /online was called while draining, the app is '${state}' again`)
  // A shutdown that joined the drain may already have moved the app on to 'closing'.
  const offline = state === 'offline' || report.outcome === 'offline' || report.outcome === 'skipped'
  const earlier = typeof report.endedAt === 'number' && (p.wasOffline || report.endedAt < p.sentAt)
  const line = earlier ? alreadyOfflineLine(report, p.sentAt) : offlineLine(report, closedWhileDraining(res.json?.connections))
  // Read defensively: apps from before the field send none, which counts as confirmed.
  const deregistration = report.deregistration
  if (deregistration?.state === 'unconfirmed') {
    const attempts = deregistration.attempts ?? 0
    const tries = `${attempts} attempt${attempts === 1 ? '' : 's'}${deregistration.lastError ? `, last error: ${deregistration.lastError}` : ''}`
    const what = offline ? line : report.outcome === 'cut' ? `the drain was cut short (the app is '${state}')` : `the app is '${state ?? 'unknown'}'`
    return fail(EXIT.UNCONFIRMED, `${what}; but the registry never confirmed the deregistration (${tries}): consumers may still route to this app. Check the registry and ${statusUrl.href}`)
  }
  if (offline) {
    say(line + (state === 'offline' ? '' : `; the app is ${state} now`))
    return EXIT.OK
  }
  if (report.outcome === 'cut') return fail(EXIT.FAILED, `the drain was cut short: the app is '${state}' (its shutdownTimeoutMs ended the drain first)`)
  return fail(EXIT.FAILED, `the admin listener answered, but the app is '${state ?? 'unknown'}', not offline`)
}

function outcome (p: Prestop, res: HttpAnswer): number {
  const { say, fail, token, admin, offlineUrl } = p
  const state = typeof res.json?.state === 'string' ? printable(res.json.state) : undefined
  switch (res.status) {
    case 200:
      return reported(p, res, state)
    case 401:
    case 403:
      return fail(EXIT.UNAUTHORIZED, token === undefined
        ? `the admin listener requires a token (${res.status}): pass the app's admin.token with --token or the LAMEDUCK_TOKEN environment variable`
        : `the admin listener rejected the token (${res.status}): --token / LAMEDUCK_TOKEN must equal the app's admin.token`)
    case 404:
      return fail(EXIT.FAILED, `${admin.origin} has no /offline route (404): --admin must point at the lameduck admin listener (the plugin's admin.port, default 54199), not the app's own port`)
    case 409:
      if (state === 'closing' || state === 'stopped') { say(`the app is already ${state}: nothing left to drain`); return EXIT.OK }
      return fail(EXIT.FAILED, `the app refused to go offline (409, state '${state ?? 'unknown'}'): ${printable(typeof res.json?.message === 'string' ? res.json.message : res.text)}`)
    default:
      return fail(EXIT.FAILED, `unexpected ${res.status} from ${offlineUrl.href}: ${printable(res.text)}`)
  }
}

function summary (status: StatusView): string {
  const phase = status.drain?.phase ? ` in phase '${status.drain.phase}'` : ''
  const inflight = status.inflight !== undefined ? `, ${status.inflight} in flight` : ''
  return `state '${status.state}'${phase}${inflight}`
}

function closedWhileDraining (connections: unknown): number | undefined {
  const closed = typeof connections === 'object' && connections !== null ? (connections as { closedWhileDraining?: unknown }).closedWhileDraining : undefined
  return typeof closed === 'number' && Number.isFinite(closed) ? closed : undefined
}

function offlineLine (report: ReportView, closed: number | undefined): string {
  if (report.outcome === 'skipped') return 'offline (the app was never registered: nothing to drain)'
  const parts = [
    `window ${formatSeconds(report.windowMs ?? 0)}`,
    `sidecar ${formatSeconds(report.sidecarMs ?? 0)}`,
    `in-flight wait ${formatSeconds(report.inflightWaitMs ?? 0)}`
  ]
  const served = `${report.requestsWhileDraining ?? 0} requests served while draining`
  return `offline after ${formatSeconds(report.totalMs ?? 0)} (${parts.join(', ')}); ${served}${closed === undefined ? '' : `, ${closed} connections closed`}`
}

function alreadyOfflineLine (report: ReportView, now: number): string {
  const endedAt = report.endedAt!
  const ago = formatSeconds(Math.max(0, Math.round((now - endedAt) / 100) * 100))
  const since = `already offline since ${new Date(endedAt).toISOString()} (${ago} ago)`
  if (report.outcome === 'skipped') return `${since}: it was never registered, nothing to drain`
  return `${since}: nothing to wait for; that drain (${report.reason ?? 'no reason given'}) took ${formatSeconds(report.totalMs ?? 0)}`
}

function withSlash (url: URL): URL {
  return url.pathname.endsWith('/') ? url : new URL(`${url.href}/`)
}

export const prestop: Command = { name: 'prestop', summary: 'app container preStop: take the app offline and wait until it is drained', help, run }
