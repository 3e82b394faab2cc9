// `lameduck-devkit eureka [...]`: runs the local Eureka server until SIGINT/SIGTERM.
import { parseArgs } from 'node:util'
import { count, type Logger } from '@lameduck/core'
import { asFlags, numeric } from '../flags.ts'
import { EUREKA_SERVER_DEFAULTS, type EurekaServerOptions } from './options.ts'
import { startEurekaCluster } from './cluster.ts'
import { startEureka, type EurekaServer } from './server.ts'

export const EUREKA_USAGE = `Usage: lameduck-devkit eureka [options]

A local Eureka server (REST v2 under /eureka and /eureka/v2) with real response
caches, delta queue and leases. For development and tests only.

Options (durations in ms):
  --port N                          port to listen on (default 8761; 0 = any free port)
  --host H                          interface (default 127.0.0.1)
  --response-cache-update-ms N      read-only response cache refresh (default 30000)
  --no-readonly-cache               serve GETs from the read-write cache: changes show at once
  --response-cache-expiry-ms N      read-write cache expiry after write (default 180000)
  --delta-retention-ms N            how long a change stays in the delta queue (default 180000)
  --delta-retention-timer-ms N      delta queue pruning period (default 30000)
  --disable-delta                   GET /apps/delta answers 403
  --eviction-interval-ms N          eviction task period (default 60000)
  --lease-duration-ms N             lease for registrants without leaseInfo (default 90000)
  --no-lease-expiry-bug             expire leases after 1 x duration (real servers: 2 x)
  --no-self-preservation            keep evicting when renews drop (default: on, as real servers)
  --renewal-percent-threshold R     self-preservation threshold share of expected renews (default 0.85)
  --peers N                         start N servers that replicate to each other (ports PORT, PORT+1, ...)
  --peer URL                        replicate to this peer server (repeatable), e.g. http://127.0.0.1:8762/eureka
  --replication-batch-ms N          peer replication batching delay (default 500; real servers: 500)
  --strict                          reject bodies a real server cannot deserialize (400)
  --verbose                         log every request
  -h, --help                        show this help
`

export interface EurekaCliIo {
  stdout?: { write(s: string): unknown }
  stderr?: { write(s: string): unknown }
  /** Stops the server like a signal would (tests). */
  signal?: AbortSignal
}

const durationFlags = {
  'response-cache-update-ms': 'responseCacheUpdateIntervalMs',
  'response-cache-expiry-ms': 'responseCacheAutoExpirationMs',
  'delta-retention-ms': 'retentionTimeInMSInDeltaQueue',
  'delta-retention-timer-ms': 'deltaRetentionTimerIntervalInMs',
  'eviction-interval-ms': 'evictionIntervalTimerInMs',
  'lease-duration-ms': 'defaultLeaseDurationMs',
  'replication-batch-ms': 'replicationBatchMs'
} as const satisfies Record<string, keyof EurekaServerOptions>

/** Option → the flag that sets it, so an out-of-range value is reported under the flag typed. */
const FLAG_OF: Readonly<Record<string, string>> = {
  ...Object.fromEntries(Object.entries(durationFlags).map(([flag, option]) => [option, `--${flag}`])),
  port: '--port',
  host: '--host',
  renewalPercentThreshold: '--renewal-percent-threshold',
  peerUrls: '--peer',
  peers: '--peers'
}

/** Parses argv (without `eureka`), starts the server, prints its address, and resolves after SIGINT/SIGTERM closed it. */
export async function runEurekaCli (argv: string[], io: EurekaCliIo = {}): Promise<void> {
  const stdout = io.stdout ?? process.stdout
  const stderr = io.stderr ?? process.stderr
  const parsed = parseEurekaArgs(argv, stdout, stderr)
  if (parsed === 'help') { stdout.write(EUREKA_USAGE); return }
  const { options, peers } = parsed
  let servers: EurekaServer[]
  let closeAll: () => Promise<void>
  if (peers > 1) {
    const { peerUrls: _peerUrls, ...clusterOptions } = options
    const cluster = await asFlags(FLAG_OF, () => startEurekaCluster({ ...clusterOptions, peers }))
    servers = cluster.servers
    closeAll = () => cluster.close()
  } else {
    const server = await asFlags(FLAG_OF, () => startEureka(options))
    servers = [server]
    closeAll = () => server.close()
  }
  for (const server of servers) {
    const o = server.options
    stdout.write(`eureka: listening on ${server.url} (apps: ${server.serviceUrl})\n`)
    stdout.write(`eureka: read-only cache ${o.useReadOnlyCache ? `every ${o.responseCacheUpdateIntervalMs} ms` : 'off'}, ` +
      `eviction every ${o.evictionIntervalTimerInMs} ms, leases ${o.defaultLeaseDurationMs} ms${o.leaseExpiryBug ? ' (x2 expiry bug)' : ''}, ` +
      `self-preservation ${o.selfPreservation ? 'on' : 'off'}${server.replication().peers.length > 0 ? `, replicating to ${server.replication().peers.join(' ')} every ${o.replicationBatchMs} ms` : ''}\n`)
  }
  await untilStopped(io.signal)
  await closeAll()
  stdout.write('eureka: stopped\n')
}

function parseEurekaArgs (argv: string[], stdout: { write(s: string): unknown }, stderr: { write(s: string): unknown }): { options: EurekaServerOptions, peers: number } | 'help' {
  const { values } = parseArgs({
    args: argv,
    allowNegative: true,
    strict: true,
    options: {
      port: { type: 'string', default: '8761' },
      host: { type: 'string', default: EUREKA_SERVER_DEFAULTS.host },
      'readonly-cache': { type: 'boolean', default: true },
      'disable-delta': { type: 'boolean', default: false },
      'lease-expiry-bug': { type: 'boolean', default: true },
      'self-preservation': { type: 'boolean', default: true },
      'renewal-percent-threshold': { type: 'string' },
      peers: { type: 'string', default: '1' },
      peer: { type: 'string', multiple: true, default: [] },
      strict: { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      ...Object.fromEntries(Object.keys(durationFlags).map((k) => [k, { type: 'string' as const }]))
    }
  })
  if (values.help) return 'help'
  const options: EurekaServerOptions = {
    port: numeric('--port', values.port as string),
    host: values.host as string,
    useReadOnlyCache: values['readonly-cache'] as boolean,
    disableDelta: values['disable-delta'] as boolean,
    leaseExpiryBug: values['lease-expiry-bug'] as boolean,
    selfPreservation: values['self-preservation'] as boolean,
    strict: values.strict as boolean,
    peerUrls: values.peer as string[],
    logger: lineLogger(stdout, stderr, values.verbose as boolean)
  }
  if (typeof values['renewal-percent-threshold'] === 'string') options.renewalPercentThreshold = numeric('--renewal-percent-threshold', values['renewal-percent-threshold'])
  for (const [flag, option] of Object.entries(durationFlags)) {
    const raw = (values as Record<string, unknown>)[flag]
    if (typeof raw === 'string') options[option] = numeric(`--${flag}`, raw)
  }
  return { options, peers: count('--peers', numeric('--peers', values.peers as string), 1, { min: 1 }) }
}

/** Resolves on SIGINT, SIGTERM or `signal`. */
function untilStopped (signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      signal?.removeEventListener('abort', stop)
      resolve()
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
    if (signal?.aborted) stop()
    else signal?.addEventListener('abort', stop, { once: true })
  })
}

function lineLogger (stdout: { write(s: string): unknown }, stderr: { write(s: string): unknown }, verbose: boolean): Logger {
  const line = (out: { write(s: string): unknown }) => (_obj: object, msg?: string) => { if (msg) out.write(`${msg}\n`) }
  return {
    debug: verbose ? line(stdout) : () => {},
    info: line(stdout),
    warn: line(stderr),
    error: line(stderr)
  }
}
