// The consumer side's options, validated once at lameduckResolver(): each error
// names the option and the fix.
import { hostname } from 'node:os'
import { checkKeys, duration, flag, InvalidOptionError, number, oneOf, record, show, silentLogger, systemClock, withMethods } from '@lameduck/core'
import type { Clock, Discovery, Logger, WarmupCurve } from '@lameduck/core'

export interface LameduckResolverOptions {
  /** Where instances come from: eurekaRegistry(), nacosRegistry(), kubernetesDiscovery(), memoryRegistry(), staticDiscovery(). */
  discovery: Discovery
  /** The target's authority: `lameduck://<name>/<service>`. Default: a name unique in this process. */
  name?: string
  /** Re-read discovery this often besides its change events; 0 = only on change events. Default 30 000. */
  refreshIntervalMs?: number
  /** Warmup curve: 'linear' (Dubbo) or 'slow-start' (Envoy). Default 'linear'. */
  curve?: WarmupCurve
  slowStart?: { windowMs?: number, aggression?: number, minWeightPercent?: number }
  /** Sent as `x-lameduck-consumer` call metadata (earlyOffline). Default `<hostname>-<random>`. */
  consumerId?: string
  /** How often weights are recomputed while an instance warms. Default: 1/50 of the shortest ramp, 20 ms..1 s. */
  warmupTickMs?: number
  /** When every instance is leaving, keep calling them (they still serve) instead of failing. Default true. */
  drainingFallback?: boolean
  /** When discovery suddenly lists no instance, keep the last ones until it lists some again. Default true. */
  emptyListProtection?: boolean
  clock?: Clock
  logger?: Logger
}

export interface ResolvedClientOptions {
  discovery: Discovery
  name: string
  refreshIntervalMs: number
  curve: WarmupCurve
  slowStart: { windowMs: number | undefined, aggression: number, minWeightPercent: number }
  consumerId: string
  warmupTickMs: number | undefined
  drainingFallback: boolean
  emptyListProtection: boolean
  clock: Clock
  logger: Logger
}

const KNOWN = {
  discovery: true,
  name: true,
  refreshIntervalMs: true,
  curve: true,
  slowStart: true,
  consumerId: true,
  warmupTickMs: true,
  drainingFallback: true,
  emptyListProtection: true,
  clock: true,
  logger: true
} satisfies Record<keyof LameduckResolverOptions, true>

let anonymous = 0

export function resolveClientOptions (options: LameduckResolverOptions): ResolvedClientOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new InvalidOptionError('lameduckResolver', 'options must be an object like { discovery }')
  checkKeys('', options, KNOWN)
  const ss = record('slowStart', options.slowStart ?? {}, '{ aggression: 1, minWeightPercent: 10 }')
  return {
    discovery: withMethods('discovery', options.discovery, ['instances', 'subscribe'], 'a Discovery (eurekaRegistry(), nacosRegistry(), kubernetesDiscovery(), memoryRegistry())'),
    name: targetName(options.name),
    refreshIntervalMs: duration('refreshIntervalMs', options.refreshIntervalMs, 30_000),
    curve: oneOf('curve', options.curve, ['linear', 'slow-start'], 'linear'),
    slowStart: {
      windowMs: ss.windowMs === undefined ? undefined : duration('slowStart.windowMs', ss.windowMs, 0),
      aggression: number('slowStart.aggression', ss.aggression, 1, { above: true, hint: ' (1 = linear)' }),
      minWeightPercent: number('slowStart.minWeightPercent', ss.minWeightPercent, 10, { max: 100, hint: ' (a percentage)' })
    },
    consumerId: consumerId(options.consumerId),
    warmupTickMs: options.warmupTickMs === undefined ? undefined : duration('warmupTickMs', options.warmupTickMs, 0, { positive: true }),
    drainingFallback: flag('drainingFallback', options.drainingFallback, true),
    emptyListProtection: flag('emptyListProtection', options.emptyListProtection, true),
    clock: withMethods('clock', options.clock ?? systemClock, ['now', 'setTimeout', 'clearTimeout'], 'a Clock (systemClock or virtualClock())'),
    logger: withMethods('logger', options.logger ?? silentLogger, ['warn', 'info'], 'a pino-compatible logger')
  }
}

/** The authority of `lameduck://<name>/<service>`: a URI host, so letters, digits, '.', '_' and '-'. */
function targetName (value: unknown): string {
  if (value === undefined) return `discovery-${++anonymous}`
  if (typeof value !== 'string' || !/^[a-z0-9][a-z0-9._-]{0,62}$/i.test(value)) {
    throw new InvalidOptionError('name', `must be 1\u201363 letters, digits, '.', '_' or '-' (it is the target's authority, lameduck://<name>/<service>), got ${show(value)}`)
  }
  return value
}

function consumerId (value: unknown): string {
  // getBuiltinModule: an ESM import of node:crypto would load WebCrypto into every app that imports the server side.
  const id = value ?? `${hostname()}-${process.getBuiltinModule('node:crypto').randomBytes(4).toString('hex')}`
  if (typeof id !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(id)) {
    throw new InvalidOptionError('consumerId', `must be 1\u2013200 visible ASCII characters (it is sent as call metadata), got ${show(id)}`)
  }
  return id
}
