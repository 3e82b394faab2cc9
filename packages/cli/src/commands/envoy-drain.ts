import { backoffDelay, InvalidOptionError } from '@lameduck/core'
import { ENVOY_ERROR_CODES, EnvoyAdminError, envoyAdmin, type ConnectionCountMethod, type EnvoyAdmin } from '@lameduck/envoy'
import { EXIT, type Command, type CommandContext } from '../command.ts'
import { formatSeconds, integerFlag, parseFlags, secondsFlag, stringFlag, UsageError, urlFlag } from '../args.ts'
import { delay } from '../delay.ts'

export const DEFAULT_ENVOY_ADMIN = 'http://127.0.0.1:15000'
const LABEL = 'lameduck envoy-drain'
const MODES = ['healthcheck', 'listeners', 'both'] as const
const METHODS: readonly ConnectionCountMethod[] = ['contour', 'istio', 'json']
// Contour's retry of /healthcheck/fail: 4 tries, 200 ms x5 (200 ms, 1 s, 5 s), 10% jitter.
const CONTOUR_BACKOFF = { initialMs: 200, factor: 5, maxMs: 5_000, jitter: 0.1 }

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

async function run (ctx: CommandContext): Promise<number> {
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
  if (values['inbound-only'] === true && mode === 'healthcheck') throw new UsageError('--inbound-only applies to --mode listeners or both')

  let envoy: EnvoyAdmin
  try {
    envoy = envoyAdmin({ url: url.href, socketPath: stringFlag(values, 'socket'), timeoutMs: 2_000 })
  } catch (err) {
    if (err instanceof InvalidOptionError) throw new UsageError(`--admin: ${err.message.slice(err.option.length + 2)}`)
    throw err
  }
  const started = Date.now()
  const deadline = timeoutMs > 0 ? started + timeoutMs : Infinity
  const say = (line: string): void => { ctx.stdout.write(`${LABEL}: ${line}\n`) }
  const fail = (code: number, line: string): number => { ctx.stderr.write(`${LABEL}: ${line}\n`); return code }
  const interrupted = (): number => fail(EXIT.FAILED, `interrupted after ${formatSeconds(Date.now() - started)}; Envoy may be left draining`)

  try {
    if (drainDelayMs > 0) {
      say(`waiting ${exactSeconds(drainDelayMs)} before draining (--drain-delay)`)
      await delay(Math.min(drainDelayMs, deadline - started), ctx.signal)
      if (ctx.signal.aborted) return interrupted()
    }
    const calls: Array<[string, () => Promise<void>]> = []
    if (mode !== 'listeners') calls.push(['POST /healthcheck/fail', () => envoy.failHealthcheck({ signal: ctx.signal })])
    if (mode !== 'healthcheck') {
      const inboundOnly = values['inbound-only'] === true
      calls.push([`POST /drain_listeners?${inboundOnly ? 'inboundonly&' : ''}graceful`, () => envoy.drainListeners({ inboundOnly, graceful: true, signal: ctx.signal })])
    }
    for (const [name, send] of calls) {
      let lastErr: unknown
      for (let attempt = 1; attempt <= attempts; attempt++) {
        try {
          await send()
          lastErr = undefined
          say(`${name}: OK`)
          break
        } catch (err) {
          if (ctx.signal.aborted) return interrupted()
          lastErr = err
          if (err instanceof EnvoyAdminError && err.statusCode !== undefined && err.statusCode < 500) {
            return fail(EXIT.FAILED, `${messageOf(err)}; is --admin Envoy's admin API?`)
          }
          if (attempt < attempts) {
            const wait = backoffDelay(attempt, CONTOUR_BACKOFF)
            ctx.stderr.write(`${LABEL}: ${name} attempt ${attempt} failed (${messageOf(err)}), retrying in ${wait} ms\n`)
            await delay(wait, ctx.signal)
            if (ctx.signal.aborted) return interrupted()
          }
        }
      }
      if (lastErr !== undefined) {
        if (lastErr instanceof EnvoyAdminError && lastErr.code === ENVOY_ERROR_CODES.UNREACHABLE) {
          return fail(EXIT.UNREACHABLE, `${name} failed after ${attempts} attempt(s): ${messageOf(lastErr)}; is Envoy running and --admin right?`)
        }
        // Contour carries on: the connections may drain anyway, and the poll says so.
        ctx.stderr.write(`${LABEL}: ${name} failed after ${attempts} attempt(s): ${messageOf(lastErr)}; polling connections anyway\n`)
      }
    }

    say(`waiting for at most ${max} open connection(s), checking every ${exactSeconds(intervalMs)} (${method} stats)`)
    let lastCount = NaN
    let lastError = ''
    const result = await envoy.waitForConnections({
      max,
      intervalMs,
      deadline,
      method,
      signal: ctx.signal,
      onPoll: (count) => {
        if (count !== lastCount) say(`${count} open connection(s)`)
        lastCount = count
        lastError = ''
      },
      onError: (err) => {
        const text = messageOf(err)
        if (text !== lastError) ctx.stderr.write(`${LABEL}: ${text}\n`)
        lastError = text
      }
    })
    const took = formatSeconds(Date.now() - started)
    if (result.outcome === 'drained') { say(`drained: ${result.count} open connection(s) after ${took}`); return EXIT.OK }
    if (result.outcome === 'unreachable') return fail(EXIT.UNREACHABLE, `Envoy's admin API went away after ${took} (${lastError}); its connections went with it`)
    const open = result.count === -1 ? 'no connection count could be read' : `${result.count} connection(s) still open`
    return fail(EXIT.FAILED, `not drained after ${exactSeconds(timeoutMs)} (--timeout): ${open}`)
  } catch (err) {
    if (ctx.signal.aborted) return interrupted()
    throw err
  } finally {
    await envoy.close()
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
