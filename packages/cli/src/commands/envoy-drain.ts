import { InvalidOptionError, sleep, systemClock } from '@lameduck/core'
import {
  drainEnvoy, ENVOY_ERROR_CODES, EnvoyAdminError, envoyAdmin,
  type ConnectionCountMethod, type DrainEnvoyResult, type DrainProgress, type DrainStrategy, type EnvoyAdmin
} from '@lameduck/envoy'
import { EXIT, type Command, type CommandContext } from '../command.ts'
import { formatSeconds, integerFlag, parseFlags, secondsFlag, stringFlag, UsageError, urlFlag } from '../args.ts'

export const DEFAULT_ENVOY_ADMIN = 'http://127.0.0.1:15000'
const LABEL = 'lameduck envoy-drain'
const MODES: readonly DrainStrategy[] = ['healthcheck', 'listeners', 'both']
const METHODS: readonly ConnectionCountMethod[] = ['contour', 'istio', 'json']

const help = `Usage: lameduck envoy-drain [--admin URL] [--min-open-connections N] [--drain-delay S]
                             [--check-interval S] [--timeout S] [--mode M] [--method M]

Contour's Envoy shutdown manager as one command, for the preStop hook of an
Envoy (or Envoy shutdown-manager) container. Optionally waits --drain-delay
for external load balancers, then fails Envoy's health checks (/ready turns
503 DRAINING, every HTTP/1.1 response carries connection: close, listeners keep
accepting) and polls Envoy's active connections until at most N remain.
Unlike Contour it ends when Envoy is unreachable instead of polling forever.

Options:
  --admin URL                 Envoy admin API (default $LAMEDUCK_ENVOY_ADMIN, else ${DEFAULT_ENVOY_ADMIN})
  --socket PATH               reach the admin API over a unix socket (Contour: /admin/admin.sock)
  --min-open-connections N    done when at most N connections remain (default 0)
  --drain-delay S             wait S seconds before draining (default 0)
  --check-interval S          pause between connection polls (default 5)
  --timeout S                 give up after S seconds in all; 0 = no limit (default 0)
  --mode M                    healthcheck: POST /healthcheck/fail (Contour, default)
                              listeners: POST /drain_listeners?graceful (Istio gateways)
                              both: the two, in that order
  --inbound-only              with --mode listeners|both: only inbound listeners
  --method M                  how to count connections: contour (envoy_http_downstream_cx_active
                              without Contour's own listeners, default), istio (listener.*
                              stats, counts TCP proxies too) or json
  --attempts N                tries of each drain call before giving up on it (default 4)
  -h, --help                  show this help

Exit codes:
  0  at most N connections remain
  1  --timeout passed with more open, Envoy refused the drain call (4xx), or interrupted
  2  bad flags
  3  Envoy's admin API is unreachable

Example (Contour-style, in the shutdown-manager container):
  lifecycle:
    preStop:
      exec:
        command: ["lameduck", "envoy-drain", "--admin", "http://127.0.0.1:9001",
                  "--drain-delay", "10", "--check-interval", "1", "--timeout", "280"]
`

interface DrainFlags {
  url: URL
  socket: string | undefined
  max: number
  drainDelayMs: number
  intervalMs: number
  timeoutMs: number
  mode: DrainStrategy
  inboundOnly: boolean
  method: ConnectionCountMethod
  attempts: number
}

function readFlags (ctx: CommandContext): DrainFlags {
  const { values } = parseFlags(ctx.argv, {
    admin: { type: 'string' },
    socket: { type: 'string' },
    'min-open-connections': { type: 'string' },
    'drain-delay': { type: 'string' },
    'check-interval': { type: 'string' },
    timeout: { type: 'string' },
    mode: { type: 'string' },
    'inbound-only': { type: 'boolean' },
    method: { type: 'string' },
    attempts: { type: 'string' }
  })
  const url = urlFlag('admin', stringFlag(values, 'admin') ?? (ctx.env.LAMEDUCK_ENVOY_ADMIN || DEFAULT_ENVOY_ADMIN))
  const max = integerFlag(values, 'min-open-connections', 'a number of connections, e.g. 0') ?? 0
  const drainDelayMs = secondsFlag(values, 'drain-delay', 0)
  const intervalMs = secondsFlag(values, 'check-interval', 5)
  if (intervalMs === 0) throw new UsageError('--check-interval must be more than 0 seconds, e.g. --check-interval 1')
  const timeoutMs = secondsFlag(values, 'timeout', 0)
  const mode = choice(values, 'mode', MODES, 'healthcheck')
  const method = choice(values, 'method', METHODS, 'contour')
  const attempts = integerFlag(values, 'attempts', 'a number of tries, e.g. 4') ?? 4
  if (attempts === 0) throw new UsageError('--attempts must be at least 1')
  const inboundOnly = values['inbound-only'] === true
  if (inboundOnly && mode === 'healthcheck') throw new UsageError('--inbound-only applies to --mode listeners or both')
  return { url, socket: stringFlag(values, 'socket'), max, drainDelayMs, intervalMs, timeoutMs, mode, inboundOnly, method, attempts }
}

function openAdmin (flags: DrainFlags): EnvoyAdmin {
  try {
    return envoyAdmin({ url: flags.url.href, socketPath: flags.socket, timeoutMs: 2_000 })
  } catch (err) {
    if (err instanceof InvalidOptionError) throw new UsageError(`--admin: ${err.message.slice(err.option.length + 2)}`)
    throw err
  }
}

async function run (ctx: CommandContext): Promise<number> {
  const flags = readFlags(ctx)
  const envoy = openAdmin(flags)
  const started = Date.now()
  const deadline = flags.timeoutMs > 0 ? started + flags.timeoutMs : Infinity
  const out = createOutput(ctx, started)
  try {
    if (flags.drainDelayMs > 0) {
      out.say(`waiting ${exactSeconds(flags.drainDelayMs)} before draining (--drain-delay)`)
      await sleep(systemClock, Math.min(flags.drainDelayMs, deadline - started), ctx.signal)
    }
    const result = await drainEnvoy(envoy, {
      strategy: flags.mode,
      inboundOnly: flags.inboundOnly,
      attempts: flags.attempts,
      pollAfterFailedCall: true,
      maxOpenConnections: flags.max,
      checkIntervalMs: flags.intervalMs,
      deadline,
      method: flags.method,
      signal: ctx.signal,
      onProgress: (event) => out.progress(event, flags)
    })
    return out.result(result, flags)
  } catch (err) {
    if (ctx.signal.aborted) return out.interrupted()
    throw err
  } finally {
    await envoy.close()
  }
}

/** What the command prints: progress on stdout, failures on stderr, and the exit code. */
function createOutput (ctx: CommandContext, started: number) {
  const say = (line: string): void => { ctx.stdout.write(`${LABEL}: ${line}\n`) }
  const warn = (line: string): void => { ctx.stderr.write(`${LABEL}: ${line}\n`) }
  const fail = (code: number, line: string): number => { warn(line); return code }
  let lastCount = NaN
  let lastError = ''
  return {
    say,
    interrupted: (): number => fail(EXIT.FAILED, `interrupted after ${formatSeconds(Date.now() - started)}; Envoy may be left draining`),
    progress (event: DrainProgress, flags: DrainFlags): void {
      switch (event.type) {
        case 'sent': say(`${event.call.request}: OK`); break
        case 'attempt-failed':
          if (event.retryInMs !== undefined) warn(`${event.call.request} attempt ${event.attempt} failed (${messageOf(event.error)}), retrying in ${event.retryInMs} ms`)
          break
        // Contour carries on: the connections may drain anyway, and the poll says so.
        case 'call-failed': warn(`${event.call.request} failed after ${event.attempts} attempt(s): ${messageOf(event.error)}; polling connections anyway`); break
        case 'waiting': say(`waiting for at most ${event.max} open connection(s), checking every ${exactSeconds(flags.intervalMs)} (${flags.method} stats)`); break
        case 'poll':
          if (event.count !== lastCount) say(`${event.count} open connection(s)`)
          lastCount = event.count
          lastError = ''
          break
        case 'poll-error': {
          const text = messageOf(event.error)
          if (text !== lastError) warn(text)
          lastError = text
        }
      }
    },
    result (result: DrainEnvoyResult, flags: DrainFlags): number {
      if (result.outcome === 'not-sent') {
        const { call, attempts, error } = result
        if (error instanceof EnvoyAdminError && error.code === ENVOY_ERROR_CODES.UNREACHABLE) {
          return fail(EXIT.UNREACHABLE, `${call.request} failed after ${attempts} attempt(s): ${messageOf(error)}; is Envoy running and --admin right?`)
        }
        return fail(EXIT.FAILED, `${messageOf(error)}; is --admin Envoy's admin API?`)
      }
      const took = formatSeconds(Date.now() - started)
      if (result.outcome === 'drained') { say(`drained: ${result.count} open connection(s) after ${took}`); return EXIT.OK }
      if (result.outcome === 'unreachable') return fail(EXIT.UNREACHABLE, `Envoy's admin API went away after ${took} (${lastError}); its connections went with it`)
      const open = result.count === -1 ? 'no connection count could be read' : `${result.count} connection(s) still open`
      return fail(EXIT.FAILED, `not drained after ${exactSeconds(flags.timeoutMs)} (--timeout): ${open}`)
    }
  }
}

function choice<T extends string> (values: Record<string, unknown>, name: string, allowed: readonly T[], fallback: T): T {
  const raw = values[name]
  if (raw === undefined) return fallback
  if (!allowed.includes(raw as T)) throw new UsageError(`--${name} must be one of ${allowed.join(', ')} (got '${String(raw)}')`)
  return raw as T
}

/** A flag's value as given: 0.02 s, not 0.0 s. */
function exactSeconds (ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`
}

function messageOf (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

export const envoyDrain: Command = {
  name: 'envoy-drain',
  summary: 'Envoy preStop (Contour-style): fail health checks / drain listeners, wait for connections <= N',
  help,
  run
}
