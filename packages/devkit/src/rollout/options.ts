import { InvalidOptionError } from '@lameduck/core'

export type RolloutMode = 'naive' | 'sleep' | 'lameduck'
export type RegistryKind = 'eureka' | 'nacos' | 'none'
export type Transport = 'http' | 'https' | 'h2c' | 'h2' | 'grpc'
/** The sidecar's Envoy: the devkit stand-in, or the real binary (Envoy 1.40.0, see realEnvoyBinary). */
export type SidecarKind = 'stand-in' | 'envoy-real'
export const TRANSPORTS: readonly Transport[] = ['http', 'https', 'h2c', 'h2', 'grpc']

export interface RolloutOptions {
  /** Traffic path: a registry with client-side balancing, or 'none' for a Kubernetes Service. Default 'eureka'. */
  registry?: RegistryKind
  /** Registry servers: Eureka peers or Nacos nodes (providers write to the first, the consumer reads the others). Default 1. */
  cluster?: number
  /** Nacos UDP push to the consumer. false: the consumer only polls (cacheMillis). Default true. */
  nacosPush?: boolean
  /** Put an Istio-style Envoy sidecar in front of every provider: true or 'stand-in' (the devkit's Envoy), 'envoy-real' (the real Envoy binary, bootstrap written by the devkit). Default false. */
  sidecar?: boolean | SidecarKind
  /** The sidecar's pilot-agent runs with EXIT_ON_ZERO_ACTIVE_CONNECTIONS (Envoy then keeps downstream_cx_active). Default false. */
  exitOnZeroActiveConnections?: boolean
  /** What the providers serve and the consumer speaks: http, https (TLS), h2c (HTTP/2 cleartext), h2 (HTTP/2 over TLS) or grpc (grpc-js servers, attachGrpc in mode lameduck, and grpc-js clients). Service and Eureka paths without a sidecar; grpc on Nacos too and behind sidecar 'envoy-real'. Default 'http'. */
  transport?: Transport
  /** naive: no preStop; sleep: preStop `sleep N`; lameduck: preStop `lameduck prestop`. Default 'lameduck'. */
  mode?: RolloutMode
  providers?: number
  rps?: number
  /** The consumer: '@lameduck/balancer' (warmup, leave-aware, retries refused connects) or 'plain' (round robin over the discovery list, keep-alive, no retries, no ejection: most consumers today). Default 'plain' in modes naive and sleep, 'balancer' in mode lameduck. */
  consumer?: 'balancer' | 'plain'
  /** Multiplies every production duration (caches, fetch, refresh, windows, grace). Default 0.05: 90 s → 4.5 s. */
  scale?: number
  /** Seconds of `sleep` in mode 'sleep', unscaled (as it would be written in the manifest). Default 30. */
  sleepSeconds?: number
  /** terminationGracePeriodSeconds, unscaled. Default: 30, or what lameduck plan would choose in lameduck mode. */
  gracePeriodSeconds?: number
  /** Kubernetes endpoint propagation lag in ms (real, not scaled). Default 1000. */
  endpointLagMs?: number
  maxSurge?: number
  maxUnavailable?: number
  /** Warmup published by lameduck providers, in ms as run (not scaled). Default 0 (the lab measures loss; the ramp test sets it). */
  warmupMs?: number
  /** ms of load before the rollout starts and after it ends. Default 1500. */
  settleMs?: number
  /** Provider boot time before readiness passes, ms. Default 300. */
  bootMs?: number
  /** Share of slow (300 ms) requests. Default 0.1. */
  slowShare?: number
  /** A provider that ignores SIGTERM (to check SIGKILL at the grace period). Default false. */
  stubbornProvider?: boolean
  /** Progress lines (and child stderr). */
  log?: (line: string) => void
}

export type ResolvedRollout = Required<Omit<RolloutOptions, 'log' | 'gracePeriodSeconds' | 'sidecar'>> & { sidecar: SidecarKind | false, gracePeriodSeconds: number | null, log: (line: string) => void }

const int = (name: string, v: unknown, min: number): number => {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw new InvalidOptionError(name, `must be an integer ≥ ${min}, got ${String(v)}`)
  return v
}
const num = (name: string, v: unknown, min: number, exclusive = false): number => {
  if (typeof v !== 'number' || !Number.isFinite(v) || (exclusive ? v <= min : v < min)) throw new InvalidOptionError(name, `must be a number ${exclusive ? '>' : '≥'} ${min}, got ${String(v)}`)
  return v
}

function consumer (v: unknown, mode: RolloutMode): 'balancer' | 'plain' {
  if (v === undefined) return mode === 'lameduck' ? 'balancer' : 'plain'
  if (v !== 'balancer' && v !== 'plain') throw new InvalidOptionError('consumer', `must be balancer or plain, got ${String(v)}`)
  return v
}

function sidecarKind (v: unknown): SidecarKind | false {
  if (v === undefined || v === false) return false
  if (v === true) return 'stand-in'
  if (v !== 'stand-in' && v !== 'envoy-real') throw new InvalidOptionError('sidecar', `must be a boolean, 'stand-in' or 'envoy-real', got ${String(v)}`)
  return v
}

/**
 * The transports each path and sidecar run: http everywhere; grpc on every path, behind the real
 * Envoy too (its inbound listener speaks h2c downstream and HTTP/2 to the app) but not behind the
 * stand-in, which proxies HTTP/1.1 only; https, h2c and h2 on the Service and Eureka paths, no sidecar.
 */
function checkTransport (transport: Transport, registry: RegistryKind, sidecar: SidecarKind | false): void {
  if (transport === 'http') return
  if (transport === 'grpc') {
    if (sidecar === 'stand-in') throw new InvalidOptionError('transport', "grpc runs behind sidecar 'envoy-real' (the real Envoy, HTTP/2 both ways), not the devkit stand-in, which proxies HTTP/1.1 only")
    return
  }
  if (registry === 'nacos' || sidecar !== false) throw new InvalidOptionError('transport', `${transport} runs on the Service and Eureka paths without a sidecar; behind a sidecar use transport 'http' (any sidecar) or 'grpc' (sidecar 'envoy-real')${registry === 'nacos' ? ", on Nacos 'http' or 'grpc'" : ''}`)
}

export function resolveRollout (o: RolloutOptions = {}): ResolvedRollout {
  const registry = o.registry ?? 'eureka'
  if (!['eureka', 'nacos', 'none'].includes(registry)) throw new InvalidOptionError('registry', `must be eureka, nacos or none, got ${String(registry)}`)
  const mode = o.mode ?? 'lameduck'
  if (!['naive', 'sleep', 'lameduck'].includes(mode)) throw new InvalidOptionError('mode', `must be naive, sleep or lameduck, got ${String(mode)}`)
  const transport = o.transport ?? 'http'
  if (!TRANSPORTS.includes(transport)) throw new InvalidOptionError('transport', `must be ${TRANSPORTS.join(', ')}, got ${String(transport)}`)
  const sidecar = sidecarKind(o.sidecar)
  checkTransport(transport, registry, sidecar)
  const cluster = int('cluster', o.cluster ?? 1, 1)
  if (cluster > 1 && registry === 'none') throw new InvalidOptionError('cluster', 'needs a registry (eureka or nacos); the Service path has none')
  return {
    registry,
    cluster,
    nacosPush: o.nacosPush ?? true,
    sidecar,
    exitOnZeroActiveConnections: o.exitOnZeroActiveConnections ?? false,
    transport,
    consumer: consumer(o.consumer, mode),
    mode,
    providers: int('providers', o.providers ?? 3, 1),
    rps: num('rps', o.rps ?? 300, 0, true),
    scale: num('scale', o.scale ?? 0.05, 0, true),
    sleepSeconds: num('sleepSeconds', o.sleepSeconds ?? 30, 0),
    gracePeriodSeconds: o.gracePeriodSeconds === undefined ? null : num('gracePeriodSeconds', o.gracePeriodSeconds, 0),
    endpointLagMs: num('endpointLagMs', o.endpointLagMs ?? 1_000, 0),
    maxSurge: int('maxSurge', o.maxSurge ?? 1, 0),
    maxUnavailable: int('maxUnavailable', o.maxUnavailable ?? 0, 0),
    warmupMs: num('warmupMs', o.warmupMs ?? 0, 0),
    settleMs: num('settleMs', o.settleMs ?? 1_500, 0),
    bootMs: num('bootMs', o.bootMs ?? 300, 0),
    slowShare: num('slowShare', o.slowShare ?? 0.1, 0),
    stubbornProvider: o.stubbornProvider ?? false,
    log: o.log ?? (() => {})
  }
}
