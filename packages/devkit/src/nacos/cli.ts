import { parseArgs } from 'node:util'
import { InvalidOptionError, type Logger } from '@lameduck/core'
import { asFlags, numeric } from '../flags.ts'
import { startNacosCluster, type NacosClusterOptions } from './cluster.ts'
import type { NacosServerOptions } from './options.ts'
import { startNacos, type NacosServer } from './server.ts'

export const NACOS_USAGE = `Usage: lameduck-devkit nacos [options]

A local Nacos naming server: the v1 HTTP API, UDP push and heartbeat expiry.

Options:
  --host HOST                     address to listen on (default 127.0.0.1)
  --port PORT                     HTTP port (default 8848; 0 picks a free one)
  --cache-millis MS               cacheMillis in list answers = client poll period (default 10000)
  --push-delay-ms MS              delay from a change to its push task (default 500)
  --push-check-interval-ms MS     the push task engine's check (default 100, as real servers; a fixed delay)
  --nodes N                       start a cluster of N nodes (ports PORT, PORT+1, ...; serverList lists all)
  --distro-sync-delay-ms MS       delay before a change reaches the other nodes (default 1000, as real servers)
  --no-push                       never push: clients see changes only when they poll
  --push-to client-ip|peer        push to the reported clientIP or the HTTP peer (default client-ip)
  --push-ack-timeout-ms MS        resend a push without ack after (default 10000)
  --push-retries N                resends of an unacked push (default 1)
  --subscriber-ttl-ms MS          forget a subscriber that stopped listing after (default cache-millis + 5000)
  --client-beat-interval-ms MS    clientBeatInterval answered to beats (default 5000)
  --heart-beat-timeout-ms MS      ephemeral instance turns unhealthy without beats after (default 15000)
  --ip-delete-timeout-ms MS       ephemeral instance is deleted without beats after (default 30000)
  --check-interval-ms MS          period of the heartbeat check (default 5000)
  --protect-threshold RATIO       healthy share at or below which all are reported healthy (default 0)
  --no-protect                    turn the protect threshold off
  --no-beat-reregister            answer 20404 to beats of unknown instances instead of re-registering them
  --no-v1-client-api              answer the 1.x client API 410 Gone, as Nacos 3.2+ does by default
  --quiet                         print only the address
  -h, --help                      show this help
`

export interface CliIo {
  out: (line: string) => void
  err: (line: string) => void
  /** Signals that stop the server. Default SIGINT and SIGTERM. */
  signals?: NodeJS.Signals[]
}

const defaultIo: CliIo = { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`) }

const DURATION_FLAGS = {
  'cache-millis': 'cacheMillis',
  'push-delay-ms': 'pushDelayMs',
  'push-check-interval-ms': 'pushCheckIntervalMs',
  'push-ack-timeout-ms': 'pushAckTimeoutMs',
  'subscriber-ttl-ms': 'subscriberTtlMs',
  'client-beat-interval-ms': 'clientBeatIntervalMs',
  'heart-beat-timeout-ms': 'heartBeatTimeoutMs',
  'ip-delete-timeout-ms': 'ipDeleteTimeoutMs',
  'check-interval-ms': 'checkIntervalMs'
} as const satisfies Record<string, keyof NacosServerOptions>

/** Option → the flag that sets it, so an out-of-range value is reported under the flag typed. */
const FLAG_OF: Readonly<Record<string, string>> = {
  ...Object.fromEntries(Object.entries(DURATION_FLAGS).map(([flag, option]) => [option, `--${flag}`])),
  host: '--host',
  port: '--port',
  pushTo: '--push-to',
  pushRetries: '--push-retries',
  nodes: '--nodes',
  distroSyncDelayMs: '--distro-sync-delay-ms',
  protectThreshold: '--protect-threshold'
}

/** Parses `lameduck-devkit nacos` arguments into server options (throws InvalidOptionError naming the flag). */
export function parseNacosArgs (argv: string[]): { options: NacosClusterOptions, help: boolean, quiet: boolean } {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowNegative: true,
      strict: true,
      options: {
        host: { type: 'string' },
        port: { type: 'string' },
        push: { type: 'boolean' },
        'push-to': { type: 'string' },
        'push-retries': { type: 'string' },
        nodes: { type: 'string' },
        'distro-sync-delay-ms': { type: 'string' },
        'protect-threshold': { type: 'string' },
        protect: { type: 'boolean' },
        'beat-reregister': { type: 'boolean' },
        'v1-client-api': { type: 'boolean' },
        quiet: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        ...Object.fromEntries(Object.keys(DURATION_FLAGS).map((k) => [k, { type: 'string' as const }]))
      }
    })
  } catch (err) {
    throw new InvalidOptionError('nacos', `${(err as Error).message}\n\n${NACOS_USAGE}`)
  }
  const v = parsed.values as Record<string, string | boolean | undefined>
  const num = (flag: string): number | undefined => {
    const raw = v[flag]
    if (raw === undefined) return undefined
    return numeric(`--${flag}`, String(raw))
  }
  const options: NacosClusterOptions = { port: num('port') ?? 8848 }
  const nodes = num('nodes')
  if (nodes !== undefined) options.nodes = nodes
  const syncDelay = num('distro-sync-delay-ms')
  if (syncDelay !== undefined) options.distroSyncDelayMs = syncDelay
  if (typeof v.host === 'string') options.host = v.host
  for (const [flag, key] of Object.entries(DURATION_FLAGS)) {
    const n = num(flag)
    if (n !== undefined) options[key] = n
  }
  if (v.push === false) options.push = false
  if (v['push-to'] !== undefined) options.pushTo = v['push-to'] as 'client-ip' | 'peer'
  const retries = num('push-retries')
  if (retries !== undefined) options.pushRetries = retries
  const threshold = num('protect-threshold')
  if (threshold !== undefined) options.protectThreshold = threshold
  if (v.protect === false) options.protectThreshold = false
  if (v['beat-reregister'] === false) options.beatReregister = false
  if (v['v1-client-api'] === false) options.v1ClientApi = false
  return { options, help: v.help === true, quiet: v.quiet === true }
}

function lineLogger (out: (line: string) => void): Logger {
  const line = (level: string) => (_obj: object, msg?: string): void => { if (msg !== undefined) out(`[${new Date().toISOString()}] ${level} ${msg}`) }
  return { debug: () => {}, info: line('INFO'), warn: line('WARN'), error: line('ERROR') }
}

/**
 * `lameduck-devkit nacos`: starts the server, prints its address and stops it
 * cleanly on SIGINT/SIGTERM. Resolves with the running server (undefined for --help).
 */
export async function runNacosCli (argv: string[], io: CliIo = defaultIo): Promise<NacosServer | undefined> {
  const { options: { nodes = 1, distroSyncDelayMs, ...options }, help, quiet } = parseNacosArgs(argv)
  if (help) { io.out(NACOS_USAGE); return undefined }
  const logger = quiet ? undefined : lineLogger(io.out)
  let server: NacosServer
  let all: NacosServer[]
  if (nodes > 1) {
    const cluster = await asFlags(FLAG_OF, () => startNacosCluster({ ...options, nodes, distroSyncDelayMs, logger }))
    all = cluster.nodes
    // The first node stands for the cluster: closing it closes every node.
    server = { ...all[0]!, close: () => cluster.close() }
    io.out(`nacos cluster of ${nodes} nodes, serverList ${cluster.serverList} (distro sync ${distroSyncDelayMs ?? 1000} ms)`)
  } else {
    server = await asFlags(FLAG_OF, () => startNacos({ ...options, logger }))
    all = [server]
  }
  for (const node of all) {
    const o = node.options
    io.out(`nacos naming server listening on ${node.url} (serverList ${node.serverList}; ` +
      `push ${o.push ? `on, delay ${o.pushDelayMs} ms` : 'off'}; cacheMillis ${o.cacheMillis} ms; ` +
      `beat ${o.clientBeatIntervalMs}/${o.heartBeatTimeoutMs}/${o.ipDeleteTimeoutMs} ms)`)
  }
  const signals = io.signals ?? ['SIGINT', 'SIGTERM']
  const stop = (signal: NodeJS.Signals): void => {
    for (const s of signals) process.off(s, stop)
    if (!quiet) io.out(`received ${signal}, stopping`)
    server.close().then(() => { if (!quiet) io.out('stopped') }, (err: unknown) => { io.err(`failed to stop: ${String(err)}`); process.exitCode = 1 })
  }
  for (const s of signals) process.once(s, stop)
  const close = server.close.bind(server)
  server.close = async () => { for (const s of signals) process.off(s, stop); await close() }
  return server
}
