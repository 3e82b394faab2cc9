// `lameduck-devkit envoy`: the local Envoy as a process. Like Envoy, SIGTERM/SIGINT and
// `POST /quitquitquit` stop it at once, without a drain period.
import { parseArgs } from 'node:util'
import { asFlags, cliFailure } from '../flags.ts'
import { startEnvoy } from './local-envoy.ts'
import type { EnvoyOptions } from './options.ts'

export const ENVOY_CLI_HELP = `Usage: lameduck-devkit envoy --listen PORT --upstream URL [options]

A local Envoy sidecar for development and tests: an HTTP/1.1 proxy in front of the app
and Envoy's admin API (/ready, /healthcheck/fail, /drain_listeners, /stats, ...).

Options:
  --listen PORT              data-plane listener port (required; 0 = any free port)
  --upstream URL             the app, e.g. http://127.0.0.1:3000 (required)
  --admin PORT               admin API port (default 15000)
  --host ADDR                listener and admin bind address (default 127.0.0.1)
  --drain-time-s S           drain period of /drain_listeners?graceful, decimals allowed (default 45)
  --drain-strategy NAME      immediate | gradual (default immediate, as Istio runs Envoy)
  --initialize-delay-ms MS   time /ready says INITIALIZING before LIVE (default 0)
  --concurrency N            worker count for per-worker stats (default 2)
  --stat-prefix NAME         HTTP connection manager stat prefix (default ingress_http)
  --retry-on LIST            reset-before-request | connect-failure | both, comma-separated | none
                             (default reset-before-request, Istio's inbound route)
  --retries N                retries of that policy (default 2, Istio's)
  --outbound URL             an outbound listener forwarding to URL (the app's own upstream calls)
  --outbound-listen PORT     its port (default 0 = any free port)
  --istio                    Istio's stats: listeners named 0.0.0.0_15006/15001, and no
                             downstream_cx_active unless --exit-on-zero-active-connections
  --exit-on-zero-active-connections
                             with --istio: keep downstream_cx_active (EXIT_ON_ZERO_ACTIVE_CONNECTIONS)
  --stats-inclusion-suffixes LIST
                             with --istio: more stat suffixes kept, comma-separated (the pod
                             annotation sidecar.istio.io/statsInclusionSuffixes)
  --stats-flush-interval-ms MS
                             how often gauges such as downstream_cx_active refresh (default 5000)
  -h, --help                 show this help

Example:
  lameduck-devkit envoy --listen 15006 --upstream http://127.0.0.1:3000 --drain-time-s 5
  curl -s localhost:15000/ready                                  # LIVE
  curl -s -X POST 'localhost:15000/drain_listeners?inboundonly&graceful'
  curl -s 'localhost:15000/stats?usedonly&filter=downstream_cx_active$'
`

/** Option → the flag that sets it, so a bad value is reported under the flag typed. */
const FLAG_OF: Readonly<Record<string, string>> = {
  listen: '--listen',
  upstream: '--upstream',
  admin: '--admin',
  host: '--host',
  adminHost: '--host',
  drainTimeMs: '--drain-time-s',
  drainStrategy: '--drain-strategy',
  initializeDelayMs: '--initialize-delay-ms',
  concurrency: '--concurrency',
  statPrefix: '--stat-prefix',
  retryOn: '--retry-on',
  upstreamRetries: '--retries',
  outbound: '--outbound',
  outboundListen: '--outbound-listen',
  statsFlushIntervalMs: '--stats-flush-interval-ms'
} satisfies Partial<Record<keyof EnvoyOptions, string>>

export interface EnvoyCliIo {
  stdout?: NodeJS.WritableStream
  stderr?: NodeJS.WritableStream
  /** Stops the proxy when aborted. Default: SIGINT/SIGTERM. */
  signal?: AbortSignal
}

/** Runs `lameduck-devkit envoy ARGS` until a signal or /quitquitquit; resolves with the exit code. */
export async function runEnvoyCli (argv: string[], io: EnvoyCliIo = {}): Promise<number> {
  const stdout = io.stdout ?? process.stdout
  const stderr = io.stderr ?? process.stderr
  let options: EnvoyOptions | 'help'
  try {
    options = parseEnvoyArgs(argv)
  } catch (err) {
    stderr.write(`lameduck-devkit envoy: ${(err as Error).message}\n${err instanceof UsageError ? '' : `\n${ENVOY_CLI_HELP}`}`)
    return 2
  }
  if (options === 'help') { stdout.write(ENVOY_CLI_HELP); return 0 }

  let envoy
  try {
    envoy = await asFlags(FLAG_OF, () => startEnvoy(options as EnvoyOptions))
  } catch (err) {
    const { code, message } = cliFailure('envoy', err)
    stderr.write(message)
    return code
  }
  stdout.write(`envoy listening on ${envoy.url} -> ${options.upstream}\n`)
  if (envoy.outboundUrl !== null) stdout.write(`envoy outbound listening on ${envoy.outboundUrl} -> ${options.outbound}\n`)
  stdout.write(`envoy admin on ${envoy.adminUrl}\n`)
  const why = await untilStopped(envoy.closed, io.signal)
  await envoy.close()
  stdout.write(why === 'quit' ? 'envoy: /quitquitquit, exited\n' : 'envoy: signal, exited\n')
  return 0
}

/** The options the flags give, or 'help'. Throws UsageError for a bad value, parseArgs' own error for an unknown flag. */
function parseEnvoyArgs (argv: string[]): EnvoyOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      listen: { type: 'string' },
      upstream: { type: 'string' },
      admin: { type: 'string', default: '15000' },
      host: { type: 'string', default: '127.0.0.1' },
      'drain-time-s': { type: 'string', default: '45' },
      'drain-strategy': { type: 'string', default: 'immediate' },
      'initialize-delay-ms': { type: 'string', default: '0' },
      concurrency: { type: 'string', default: '2' },
      'stat-prefix': { type: 'string', default: 'ingress_http' },
      'retry-on': { type: 'string', default: 'reset-before-request' },
      retries: { type: 'string', default: '2' },
      outbound: { type: 'string' },
      'outbound-listen': { type: 'string', default: '0' },
      istio: { type: 'boolean', default: false },
      'exit-on-zero-active-connections': { type: 'boolean', default: false },
      'stats-inclusion-suffixes': { type: 'string' },
      'stats-flush-interval-ms': { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help === true) return 'help'
  if (values.listen === undefined) throw new UsageError('--listen PORT is required')
  if (values.upstream === undefined) throw new UsageError('--upstream URL is required')
  const options: EnvoyOptions = {
    listen: number('listen', values.listen),
    upstream: values.upstream,
    admin: number('admin', values.admin),
    host: values.host,
    adminHost: values.host,
    drainTimeMs: Math.round(number('drain-time-s', values['drain-time-s']) * 1000),
    drainStrategy: values['drain-strategy'] as EnvoyOptions['drainStrategy'],
    initializeDelayMs: number('initialize-delay-ms', values['initialize-delay-ms']),
    concurrency: number('concurrency', values.concurrency),
    statPrefix: values['stat-prefix'],
    retryOn: values['retry-on'] as EnvoyOptions['retryOn'],
    upstreamRetries: number('retries', values.retries),
    outbound: values.outbound,
    outboundListen: number('outbound-listen', values['outbound-listen']),
    istio: values.istio === true
      ? { exitOnZeroActiveConnections: values['exit-on-zero-active-connections'] === true, ...(values['stats-inclusion-suffixes'] === undefined ? {} : { statsInclusionSuffixes: values['stats-inclusion-suffixes'].split(',').map((x) => x.trim()).filter(Boolean) }) }
      : false,
    ...(values['stats-flush-interval-ms'] === undefined ? {} : { statsFlushIntervalMs: number('stats-flush-interval-ms', values['stats-flush-interval-ms']) })
  }
  if (values['stats-inclusion-suffixes'] !== undefined && values.istio !== true) throw new UsageError('--stats-inclusion-suffixes needs --istio')
  if (values['exit-on-zero-active-connections'] === true && values.istio !== true) throw new UsageError('--exit-on-zero-active-connections needs --istio')
  return options
}

function number (flag: string, text: string | undefined): number {
  const n = Number(text)
  if (text === undefined || text.trim() === '' || !Number.isFinite(n) || n < 0) throw new UsageError(`--${flag} must be a non-negative number, got '${text ?? ''}'`)
  return n
}

/** Resolves with why the proxy stops: `signal` aborted (default: SIGINT/SIGTERM), or /quitquitquit closed it. */
async function untilStopped (closed: Promise<unknown>, signal: AbortSignal | undefined): Promise<'signal' | 'quit'> {
  const stop = new AbortController()
  const onSignal = (): void => stop.abort()
  if (signal === undefined) {
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
  } else if (signal.aborted) {
    stop.abort()
  } else {
    signal.addEventListener('abort', onSignal, { once: true })
  }
  const stopped = new Promise<'signal'>((resolve) => {
    if (stop.signal.aborted) resolve('signal')
    else stop.signal.addEventListener('abort', () => resolve('signal'), { once: true })
  })
  const why = await Promise.race([stopped, closed.then(() => 'quit' as const)])
  process.off('SIGINT', onSignal)
  process.off('SIGTERM', onSignal)
  signal?.removeEventListener('abort', onSignal)
  return why
}

class UsageError extends Error {}
