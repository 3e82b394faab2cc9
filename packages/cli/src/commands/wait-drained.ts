import { EXIT, type Command, type CommandContext } from '../command.ts'
import { formatSeconds, parseFlags, secondsFlag, stringFlag, UsageError, urlFlag } from '../args.ts'
import type { Dispatcher } from 'undici'
import { call, createAgent, networkFailure, type HttpAnswer } from '../http.ts'
import { DEFAULT_ADMIN_URL, sleep, systemClock } from '@lameduck/core'
import { printable } from './prestop-wire.ts'

const LABEL = 'lameduck wait-drained'
/** The app no longer needs its sidecar in these states. */
const DONE = new Set(['offline', 'stopped'])

const help = `Usage: lameduck wait-drained [--admin URL] [--token T] [--timeout S] [--interval S]

The sidecar container's preStop hook. kubelet runs every container's preStop
at once and sends SIGTERM to a container as soon as its own hook returns, so
without this an Envoy sidecar can stop while the app still drains through it.
It blocks until the app's lameduck admin says the app is offline or stopped
(GET /status), or until the app is gone (connection refused): the sidecar
then always stops after the app.

Options:
  --admin URL     the app's lameduck admin listener
                  (default $LAMEDUCK_ADMIN, else ${DEFAULT_ADMIN_URL})
  --token T       admin bearer token (default $LAMEDUCK_TOKEN)
  --timeout S     give up after S seconds; 0 waits until the app is done and
                  leaves the bound to terminationGracePeriodSeconds (default 0)
  --interval S    pause between /status polls (default 1)
  -h, --help      show this help

Exit codes:
  0  the app is offline or stopped, or its admin listener is gone
  1  --timeout passed first, interrupted, or --admin is not a lameduck admin
  2  bad flags
  4  the token was rejected (401/403)

Example (the Envoy container of the pod):
  lifecycle:
    preStop:
      exec:
        command: ["lameduck", "wait-drained", "--admin", "http://127.0.0.1:54199"]
`

async function run (ctx: CommandContext): Promise<number> {
  const { values } = parseFlags(ctx.argv, {
    admin: { type: 'string' },
    token: { type: 'string' },
    timeout: { type: 'string' },
    interval: { type: 'string' }
  })
  const admin = urlFlag('admin', stringFlag(values, 'admin') ?? (ctx.env.LAMEDUCK_ADMIN || DEFAULT_ADMIN_URL))
  const token = stringFlag(values, 'token') ?? (ctx.env.LAMEDUCK_TOKEN || undefined)
  const timeoutMs = secondsFlag(values, 'timeout', 0)
  const intervalMs = secondsFlag(values, 'interval', 1)
  if (intervalMs === 0) throw new UsageError('--interval must be more than 0 seconds, e.g. --interval 1')
  const statusUrl = new URL('status', admin.href.endsWith('/') ? admin : new URL(`${admin.href}/`))
  const requestTimeoutMs = Math.min(5_000, Math.max(1_000, intervalMs))

  const started = Date.now()
  const agent = createAgent()
  let last = 'no answer yet'
  const note = (what: string, stream = ctx.stdout): void => {
    if (what === last) return
    last = what
    stream.write(`${LABEL}: ${what}\n`)
  }
  const w: Watch = { ctx, agent, statusUrl, token, requestTimeoutMs, started, note }
  try {
    for (;;) {
      if (ctx.signal.aborted) {
        ctx.stderr.write(`${LABEL}: interrupted while the app was still running (last: ${last})\n`)
        return EXIT.FAILED
      }
      const code = await check(w)
      if (code !== undefined) return code
      const elapsed = Date.now() - started
      if (timeoutMs > 0 && elapsed >= timeoutMs) {
        ctx.stderr.write(`${LABEL}: the app was not offline after ${formatSeconds(timeoutMs)} (last: ${last}); letting the sidecar stop anyway\n`)
        return EXIT.FAILED
      }
      await sleep(systemClock, timeoutMs > 0 ? Math.min(intervalMs, timeoutMs - elapsed) : intervalMs, ctx.signal, { resolveOnAbort: true })
    }
  } finally {
    await agent.destroy()
  }
}

interface Watch {
  ctx: CommandContext
  agent: Dispatcher
  statusUrl: URL
  token: string | undefined
  requestTimeoutMs: number
  started: number
  note: (what: string, stream?: NodeJS.WritableStream) => void
}

/** One /status poll: an exit code when it decides, else undefined (poll again). */
async function check (w: Watch): Promise<number | undefined> {
  const { ctx, statusUrl, started, note } = w
  try {
    return answered(w, await call(w.agent, statusUrl, { token: w.token, signal: ctx.signal, timeoutMs: w.requestTimeoutMs }))
  } catch (err) {
    if (ctx.signal.aborted) return undefined
    const failure = networkFailure(err, statusUrl)
    if (failure.kind === 'refused') {
      ctx.stdout.write(`${LABEL}: the app's admin listener is gone (connection refused) after ${formatSeconds(Date.now() - started)}; the sidecar may stop\n`)
      return EXIT.OK
    }
    note(`${failure.reason}, retrying`, ctx.stderr)
  }
}
function answered (w: Watch, res: HttpAnswer): number | undefined {
  const { ctx, statusUrl, started, note } = w
  if (res.status === 401 || res.status === 403) {
    ctx.stderr.write(`${LABEL}: ${statusUrl.href} answered ${res.status}: pass the admin token with --token or $LAMEDUCK_TOKEN\n`)
    return EXIT.UNAUTHORIZED
  }
  const state = res.json?.state
  if (res.status === 200 && typeof state === 'string') {
    if (DONE.has(state)) {
      ctx.stdout.write(`${LABEL}: the app is ${state} after ${formatSeconds(Date.now() - started)}; the sidecar may stop\n`)
      return EXIT.OK
    }
    note(`the app is ${printable(state)}, waiting for offline or stopped`)
  } else if (res.status === 404 || (res.status === 200 && typeof state !== 'string')) {
    // Waiting on something that will never say "offline" would only end at the grace period.
    ctx.stderr.write(`${LABEL}: ${statusUrl.href} answered ${res.status} without a lameduck state: is --admin the app's lameduck admin listener?\n`)
    return EXIT.FAILED
  } else {
    note(`${statusUrl.href} answered ${res.status}, retrying`, ctx.stderr)
  }
}

export const waitDrained: Command = {
  name: 'wait-drained',
  summary: 'sidecar preStop: block until the app is offline/stopped or gone, so the sidecar stops last',
  help,
  run
}
