import { InvalidOptionError, checkKeys, redactText, resolveWeightRamp, show as describe, silentLogger, systemClock, type Clock, type Logger, type WeightRampOptions } from '@lameduck/core'

export interface NacosRegistryOptions {
  /** Nacos servers: '127.0.0.1:8848' or 'h1:8848,h2:8848' or an array; the port defaults to 8848. Required unless `client.endpoint` is set. */
  serverList?: string | string[]
  /** Namespace id. Default 'public'. */
  namespace?: string
  /** Group of registered and watched services. Default 'DEFAULT_GROUP'. */
  group?: string
  /** Cluster instances register in. Default 'DEFAULT'. */
  cluster?: string
  /** Clusters discovery watches. Default [cluster]. */
  clusters?: string[]
  /** The Nacos weight for a lameduck weight (metadata `lameduck.weight`, default 100): a number, or a function. Default: the same number. */
  nacosWeight?: number | ((weight: number) => number)
  /** Delay of the first beat, and the beat interval until the server answers its own. Default 5000. */
  beatIntervalMs?: number
  /** How long `ready()` waits for the client (UDP receiver) to start and for a first list. Default 10000. */
  readyTimeoutMs?: number
  /** Passed to the nacos naming client (username, password, endpoint, ssl, ak/sk, ...). */
  client?: Record<string, unknown>
  /**
   * UDP push from the server. true: pushes are accepted from the configured servers' addresses only
   * (never a `dump` request); false: no push receiver, polls say udpPort=0, changes arrive by polling
   * every cacheMillis (size the window with nacosWindows({ push: false })). Default true.
   */
  push?: boolean
  /**
   * The client protocol. 'v1' (default): the \`nacos\` npm SDK (1.x HTTP API + UDP push), served by
   * Nacos 1.x-3.1 and refused by 3.2+ by default. 'v3': the 3.x client open API
   * (/nacos/v3/client/ns/instance), no push: discovery polls every \`pollIntervalMs\`. At startup the
   * adapter asks each server whether it serves the chosen one and throws NacosProtocolError if not.
   */
  transport?: 'v1' | 'v3'
  /** transport 'v3' only: how often discovery polls the list. Default 10000 (as the v1 cacheMillis). */
  pollIntervalMs?: number
  /** pino-compatible logger; the SDK's own logging is routed into it too. Default silent. */
  logger?: Logger
  /** Drives the heartbeat timers; tests pass core's virtualClock(). Default the system clock. */
  clock?: Clock
  /**
   * Warmup for consumers that read only the Nacos weight (the Java client's weighted pick,
   * Spring Cloud Alibaba) or metadata `weight` (Spring Cloud LoadBalancer's weighted supplier):
   * register with a low weight and raise it by registering again over the app's warmupMs, a
   * step per consumer refresh (or every `stepMs`). Default false.
   */
  weightRamp?: boolean | WeightRampOptions
}

export interface ResolvedNacosOptions {
  serverList: string[] | undefined
  namespace: string
  group: string
  cluster: string
  clusters: string[]
  nacosWeight: (weight: number) => number
  beatIntervalMs: number
  readyTimeoutMs: number
  client: Record<string, unknown>
  push: boolean
  transport: 'v1' | 'v3'
  pollIntervalMs: number
  logger: Logger
  clock: Clock
  /** null when off. */
  weightRamp: WeightRampOptions | null
}

/** Every option, checked against the type by the compiler. */
const KNOWN = {
  serverList: true, namespace: true, group: true, cluster: true, clusters: true, nacosWeight: true, beatIntervalMs: true, readyTimeoutMs: true, client: true, push: true, transport: true, pollIntervalMs: true, logger: true, clock: true, weightRamp: true
} satisfies Record<keyof NacosRegistryOptions, true>
const CLUSTER_NAME = /^[0-9a-zA-Z-]+$/
const OWNED_BY_ADAPTER = ['serverList', 'namespace']

function serverEntries (raw: unknown): string[] {
  const entries = typeof raw === 'string' ? raw.split(',') : Array.isArray(raw) ? raw : null
  if (entries === null) throw new InvalidOptionError('serverList', `expected 'host:port' (comma-separated for several) or an array of them, got ${describe(raw)}`)
  const out: string[] = []
  for (const entry of entries) {
    if (typeof entry !== 'string' || entry.trim() === '') throw new InvalidOptionError('serverList', `every entry must be a non-empty 'host:port', got ${describe(entry)}`)
    const value = entry.trim()
    const shown = redactText(value)
    if (/^[a-z]+:\/\//i.test(value)) throw new InvalidOptionError('serverList', `give 'host:port' without a scheme (got '${shown}'); set client.ssl for https`)
    // The SDK sends no userinfo, and describe() would show it: credentials belong in client.username/password.
    if (value.includes('@')) throw new InvalidOptionError('serverList', `'${value.slice(value.lastIndexOf('@') + 1)}' has credentials before '@'; give 'host:port' and set client.username and client.password (or client.accessKey and client.secretKey)`)
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(value)
    const port = m?.[2] === undefined ? 8848 : Number(m[2])
    if (m === null || port < 1 || port > 65535) throw new InvalidOptionError('serverList', `'${shown}' is not 'host:port' with a port from 1 to 65535`)
    out.push(value)
  }
  if (out.length === 0) throw new InvalidOptionError('serverList', 'must name at least one server, e.g. 127.0.0.1:8848')
  return out
}

function name (option: string, value: unknown, fallback: string, check: (v: string) => string | null): string {
  if (value === undefined) return fallback
  if (typeof value !== 'string' || value.trim() === '') throw new InvalidOptionError(option, `must be a non-empty string, got ${describe(value)}`)
  const problem = check(value)
  if (problem !== null) throw new InvalidOptionError(option, problem)
  return value
}

function flag (option: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') throw new InvalidOptionError(option, `must be true or false, got ${describe(value)}`)
  return value
}

function duration (option: string, value: unknown, fallback: number, min = 1): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) throw new InvalidOptionError(option, `must be a number of milliseconds \u2265 ${min}, got ${describe(value)}`)
  return value
}

export function resolveOptions (options: NacosRegistryOptions, factory: string): ResolvedNacosOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new InvalidOptionError(factory, `options must be an object like { serverList: '127.0.0.1:8848' }, got ${describe(options)}`)
  checkKeys('', options, KNOWN, ` (options of ${factory}; SDK options go in \`client\`)`)
  const client = options.client ?? {}
  if (typeof client !== 'object' || client === null || Array.isArray(client)) throw new InvalidOptionError('client', `must be an object of nacos naming client options, got ${describe(client)}`)
  for (const key of OWNED_BY_ADAPTER) {
    if (key in client) throw new InvalidOptionError(`client.${key}`, `set \`${key}\` at the top level of ${factory}() options, not in \`client\``)
  }
  const endpoint = (client as { endpoint?: unknown }).endpoint
  if (options.serverList === undefined && (typeof endpoint !== 'string' || endpoint === '')) {
    throw new InvalidOptionError('serverList', "is required, e.g. '127.0.0.1:8848' (or set client.endpoint for address-server mode)")
  }
  const logger = options.logger ?? silentLogger
  for (const level of ['debug', 'info', 'warn', 'error'] as const) {
    if (typeof (logger as unknown as Record<string, unknown>)[level] !== 'function') throw new InvalidOptionError('logger', `must be a pino-compatible logger with a ${level}() method`)
  }
  const cluster = name('cluster', options.cluster, 'DEFAULT', (v) => CLUSTER_NAME.test(v) ? null : `Nacos accepts only 0-9a-zA-Z- in cluster names, got '${v}'`)
  let clusters = [cluster]
  if (options.clusters !== undefined) {
    if (!Array.isArray(options.clusters) || options.clusters.length === 0) throw new InvalidOptionError('clusters', `must be a non-empty array of cluster names, got ${describe(options.clusters)}`)
    clusters = options.clusters.map((c, i) => name(`clusters[${i}]`, c, '', (v) => CLUSTER_NAME.test(v) ? null : `Nacos accepts only 0-9a-zA-Z- in cluster names, got '${v}'`))
  }
  const weight = options.nacosWeight
  let nacosWeight: (w: number) => number = (w) => w
  if (typeof weight === 'number') {
    if (!Number.isFinite(weight) || weight < 0 || weight > 10_000) throw new InvalidOptionError('nacosWeight', `Nacos weights range from 0 to 10000, got ${weight}`)
    nacosWeight = () => weight
  } else if (typeof weight === 'function') {
    nacosWeight = weight
  } else if (weight !== undefined) {
    throw new InvalidOptionError('nacosWeight', `must be a number or a function (weight) => number, got ${describe(weight)}`)
  }
  const transport = options.transport ?? 'v1'
  if (transport !== 'v1' && transport !== 'v3') throw new InvalidOptionError('transport', `must be 'v1' (the nacos npm SDK) or 'v3' (the Nacos 3.x client open API), got ${describe(options.transport)}`)
  if (transport === 'v1' && options.pollIntervalMs !== undefined) throw new InvalidOptionError('pollIntervalMs', "applies to transport: 'v3' only; with 'v1' the server's cacheMillis sets the poll period")
  if (transport === 'v3') {
    if (options.serverList === undefined) throw new InvalidOptionError('serverList', "is required with transport: 'v3' (no address-server mode)")
    for (const key of ['username', 'password', 'accessKey', 'secretKey', 'endpoint']) {
      if (key in client) throw new InvalidOptionError(`client.${key}`, "is not supported with transport: 'v3' yet (only client.ssl is); use transport: 'v1' on servers with authentication")
    }
    if (options.push === true) throw new InvalidOptionError('push', "the 3.x client open API has no push; leave push unset (or false) with transport: 'v3'")
  }
  return {
    serverList: options.serverList === undefined ? undefined : serverEntries(options.serverList),
    namespace: name('namespace', options.namespace, 'public', (v) => /\s/.test(v) ? `must not contain whitespace, got '${v}'` : null),
    group: name('group', options.group, 'DEFAULT_GROUP', (v) => v.includes('@@') ? `must not contain '@@', got '${v}'` : null),
    cluster,
    clusters,
    nacosWeight,
    beatIntervalMs: duration('beatIntervalMs', options.beatIntervalMs, 5_000),
    readyTimeoutMs: duration('readyTimeoutMs', options.readyTimeoutMs, 10_000),
    client: { ...client },
    push: transport === 'v3' ? false : flag('push', options.push, true),
    transport,
    pollIntervalMs: duration('pollIntervalMs', options.pollIntervalMs, 10_000),
    logger,
    clock: options.clock ?? systemClock,
    weightRamp: resolveWeightRamp('weightRamp', options.weightRamp)
  }
}
