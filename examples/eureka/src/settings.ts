// One knob for the whole example: SCALE multiplies every production interval,
// so the server, the providers and the consumer agree on the caches and a local
// run shows a whole offline in seconds. SCALE=1 runs the production values.
import { BALANCER_REFRESH_MS, type EurekaBalancer } from '@lameduck/eureka'

/** Eureka and Spring Cloud defaults the example scales down. */
export const PRODUCTION = {
  /** Server: eureka.server.response-cache-update-interval-ms (the read-only cache). */
  responseCacheUpdateIntervalMs: 30_000,
  /** Consumers: eureka.client.registry-fetch-interval-seconds (eureka-js-client registryFetchInterval). */
  registryFetchIntervalMs: 30_000,
  /** Providers: eureka.instance.lease-renewal-interval-in-seconds (eureka-js-client heartbeatInterval). */
  heartbeatIntervalMs: 30_000,
  /** Providers: eureka.instance.lease-expiration-duration-in-seconds. */
  leaseDurationSecs: 90,
  /** Server: eureka.server.eviction-interval-timer-in-ms. */
  evictionIntervalMs: 60_000,
  /** The plugin's default warmup: consumers ramp a new instance over 2 minutes. */
  warmupMs: 120_000
}

export const SERVICE = 'orders'

/** The window presets that describe Eureka consumers, and the balancer hop each adds. */
const BALANCER_OF = { 'eureka-ribbon': 'ribbon', 'eureka-spring': 'spring', 'eureka-node': 'none' } as const satisfies Record<string, EurekaBalancer>
export type EurekaPreset = keyof typeof BALANCER_OF

export interface Settings {
  scale: number
  /** Which consumers the window is planned for (WINDOWS). */
  windows: EurekaPreset
  /** EUREKA_URL, default http://127.0.0.1:8761/eureka. */
  eurekaUrl: string
  responseCacheUpdateIntervalMs: number
  registryFetchIntervalMs: number
  /** The consumer balancer's own refresh: Ribbon 30 s, Spring Cloud LoadBalancer 35 s, none for a Node consumer. */
  balancerRefreshMs: number
  heartbeatIntervalMs: number
  leaseDurationSecs: number
  evictionIntervalMs: number
  warmupMs: number
  /** MARGIN_MS, not scaled: slack for request latency and timer jitter on a busy machine. Default 0. */
  marginMs: number
}

export const DEFAULT_SCALE = 0.1

export function readSettings (env: NodeJS.ProcessEnv = process.env): Settings {
  const scale = env.SCALE === undefined || env.SCALE === '' ? DEFAULT_SCALE : Number(env.SCALE)
  if (!Number.isFinite(scale) || scale <= 0) throw new Error(`SCALE must be a positive number (1 = production intervals, 0.1 = ten times faster), got '${env.SCALE}'`)
  const windows = (env.WINDOWS || 'eureka-ribbon') as EurekaPreset
  if (!Object.hasOwn(BALANCER_OF, windows)) throw new Error(`WINDOWS must be one of ${Object.keys(BALANCER_OF).join(', ')}, got '${windows}'`)
  const marginMs = Number(env.MARGIN_MS || 0)
  if (!Number.isFinite(marginMs) || marginMs < 0) throw new Error(`MARGIN_MS must be a number of ms ≥ 0, got '${env.MARGIN_MS}'`)
  const scaled = (ms: number): number => Math.round(ms * scale)
  return {
    scale,
    windows,
    eurekaUrl: env.EUREKA_URL || 'http://127.0.0.1:8761/eureka',
    responseCacheUpdateIntervalMs: scaled(PRODUCTION.responseCacheUpdateIntervalMs),
    registryFetchIntervalMs: scaled(PRODUCTION.registryFetchIntervalMs),
    balancerRefreshMs: scaled(BALANCER_REFRESH_MS[BALANCER_OF[windows]]),
    heartbeatIntervalMs: scaled(PRODUCTION.heartbeatIntervalMs),
    // Whole seconds, and comfortably above the heartbeat: a busy laptop must not lose the lease.
    leaseDurationSecs: Math.max(5, Math.round(PRODUCTION.leaseDurationSecs * scale)),
    evictionIntervalMs: scaled(PRODUCTION.evictionIntervalMs),
    warmupMs: scaled(PRODUCTION.warmupMs),
    marginMs
  }
}

/** `HH:MM:SS.mmm`, the prefix of every line the example prints. */
export function clock (): string {
  return new Date().toISOString().slice(11, 23)
}
