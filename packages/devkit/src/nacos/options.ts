import { checkKeys, count, duration, flag, InvalidOptionError, number, oneOf, record, show, silentLogger, withMethods, type Logger } from '@lameduck/core'

// Options of the local Nacos naming server. Defaults are those of a Nacos 2.x
// server; every duration can be scaled down so tests run in seconds.
export interface NacosServerOptions {
  /** Address to listen on (HTTP and the UDP push socket). Default '127.0.0.1'. */
  host?: string
  /** HTTP port. Default 0 (a free port); the CLI defaults to 8848. */
  port?: number
  /** `cacheMillis` in every ServiceInfo: the SDK's poll period. Default 10000. */
  cacheMillis?: number
  /** UDP push to subscribers. Default true; false exercises the polling path. */
  push?: boolean
  /** Delay between a change and its push (2.x/3.x: 500 ms; 1.x: 1000 ms). Default 500. */
  pushDelayMs?: number
  /**
   * The push task engine's check period (NacosDelayTaskExecuteEngine: 100 ms). A fixed
   * delay on top of pushDelayMs: leave it at 100 when scaling the other durations. Default 100.
   */
  pushCheckIntervalMs?: number
  /** Where pushes go: the `clientIP` the subscriber reported (like Nacos) or the HTTP peer address. Default 'client-ip'. */
  pushTo?: 'client-ip' | 'peer'
  /** How long to wait for a push-ack before resending. Default 10000. */
  pushAckTimeoutMs?: number
  /** Resends after a missing ack. Default 1. */
  pushRetries?: number
  /** A subscriber that has not listed the service for this long gets no more pushes. Default cacheMillis + 5000. */
  subscriberTtlMs?: number
  /** `clientBeatInterval` answered to beats. Default 5000. */
  clientBeatIntervalMs?: number
  /** An ephemeral instance without a beat for this long turns unhealthy. Default 15000. */
  heartBeatTimeoutMs?: number
  /** An ephemeral instance without a beat for this long is deleted. Default 30000. */
  ipDeleteTimeoutMs?: number
  /** Period of the heartbeat check task. Default 5000. */
  checkIntervalMs?: number
  /** Share of healthy instances at or below which all are reported healthy; false turns protection off. Default 0. */
  protectThreshold?: number | false
  /** Re-register an unknown instance from a full beat ("data compensation", Nacos ≥ 1.3.2). Default true; false answers code 20404. */
  beatReregister?: boolean
  /**
   * The 1.x client HTTP API (register, deregister, list, beat, metrics). false answers those 410 Gone
   * as Nacos 3.2+ does by default (nacos.core.api.compatibility.client.enabled=false); the 3.x client
   * open API (/nacos/v3/client/ns/instance) is served either way. Default true.
   */
  v1ClientApi?: boolean
  /** pino-compatible logger. Default silent. */
  logger?: Logger
}

export interface ResolvedNacosServerOptions {
  host: string
  port: number
  cacheMillis: number
  push: boolean
  pushDelayMs: number
  pushCheckIntervalMs: number
  pushTo: 'client-ip' | 'peer'
  pushAckTimeoutMs: number
  pushRetries: number
  subscriberTtlMs: number
  clientBeatIntervalMs: number
  heartBeatTimeoutMs: number
  ipDeleteTimeoutMs: number
  checkIntervalMs: number
  protectThreshold: number | false
  beatReregister: boolean
  v1ClientApi: boolean
  logger: Logger
}

/** Every option, checked against the type by the compiler. */
const KNOWN = {
  host: true,
  port: true,
  push: true,
  pushTo: true,
  pushRetries: true,
  protectThreshold: true,
  beatReregister: true,
  v1ClientApi: true,
  logger: true,
  cacheMillis: true,
  pushDelayMs: true,
  pushCheckIntervalMs: true,
  pushAckTimeoutMs: true,
  subscriberTtlMs: true,
  clientBeatIntervalMs: true,
  heartBeatTimeoutMs: true,
  ipDeleteTimeoutMs: true,
  checkIntervalMs: true
} satisfies Record<keyof NacosServerOptions, true>

export function resolveServerOptions (options: NacosServerOptions = {}): ResolvedNacosServerOptions {
  record('startNacos', options, '{ port: 8848 }')
  checkKeys('startNacos', options, KNOWN)
  // Periods and timeouts of timers: 0 would spin or time out at once.
  const positive = (key: 'cacheMillis' | 'checkIntervalMs' | 'pushCheckIntervalMs' | 'pushAckTimeoutMs' | 'clientBeatIntervalMs', fallback: number): number =>
    duration(key, options[key], fallback, { positive: true })
  const host = options.host ?? '127.0.0.1'
  if (typeof host !== 'string' || host === '') throw new InvalidOptionError('host', `must be a non-empty string such as '127.0.0.1', got ${show(host)}`)
  const cacheMillis = positive('cacheMillis', 10_000)
  const heartBeatTimeoutMs = duration('heartBeatTimeoutMs', options.heartBeatTimeoutMs, 15_000)
  const ipDeleteTimeoutMs = duration('ipDeleteTimeoutMs', options.ipDeleteTimeoutMs, 30_000)
  if (ipDeleteTimeoutMs < heartBeatTimeoutMs) {
    throw new InvalidOptionError('ipDeleteTimeoutMs', `must not be shorter than heartBeatTimeoutMs (${heartBeatTimeoutMs} ms), got ${ipDeleteTimeoutMs}`)
  }
  return {
    host,
    port: count('port', options.port, 0, { max: 65535 }),
    cacheMillis,
    push: flag('push', options.push, true),
    pushDelayMs: duration('pushDelayMs', options.pushDelayMs, 500),
    pushCheckIntervalMs: positive('pushCheckIntervalMs', 100),
    pushTo: oneOf('pushTo', options.pushTo, ['client-ip', 'peer'], 'client-ip'),
    pushAckTimeoutMs: positive('pushAckTimeoutMs', 10_000),
    pushRetries: count('pushRetries', options.pushRetries, 1),
    subscriberTtlMs: duration('subscriberTtlMs', options.subscriberTtlMs, cacheMillis + 5_000),
    clientBeatIntervalMs: positive('clientBeatIntervalMs', 5_000),
    heartBeatTimeoutMs,
    ipDeleteTimeoutMs,
    checkIntervalMs: positive('checkIntervalMs', 5_000),
    protectThreshold: options.protectThreshold === false ? false : number('protectThreshold', options.protectThreshold, 0, { max: 1, hint: ', or false to turn protection off' }),
    beatReregister: flag('beatReregister', options.beatReregister, true),
    v1ClientApi: flag('v1ClientApi', options.v1ClientApi, true),
    logger: withMethods<Logger>('logger', options.logger ?? silentLogger, ['debug', 'info', 'warn', 'error'], 'a pino-compatible logger')
  }
}
