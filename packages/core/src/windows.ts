import { InvalidOptionError } from './errors.ts'
import { assertDuration, checkKeys, show } from './validate.ts'

// The propagation window is how long consumers may keep routing to an instance
// after it deregistered: the sum of every cache between the registry and the
// consumer's connection pool. Every field is a worst case in milliseconds.
export interface WindowParts {
  /** Registry server response cache (Eureka read-only cache: 30 s; Nacos: push delay + 100 ms task check, the list snapshot). */
  serverCacheMs: number
  /**
   * Replication between registry servers, when consumers may read another server than
   * the one the provider wrote to (Eureka peers: 500 ms batches; Nacos distro sync: 1 s).
   * A fixed delay: do not scale it with the others. Default 0 (one server).
   */
  replicationMs: number
  /** Consumer's registry fetch or poll interval (eureka client 30 s; Nacos cacheMillis 10 s). */
  clientFetchMs: number
  /** Consumer's balancer server-list refresh (Ribbon 30 s; Spring Cloud LoadBalancer 35 s). */
  balancerRefreshMs: number
  /** Kubernetes endpoint, kube-proxy and ingress propagation after the pod turns terminating. */
  endpointLagMs: number
  /** Extra safety margin: request latency, timer jitter. */
  marginMs: number
}

export const WINDOW_PARTS: readonly (keyof WindowParts)[] = ['serverCacheMs', 'replicationMs', 'clientFetchMs', 'balancerRefreshMs', 'endpointLagMs', 'marginMs']

const WHY: Record<keyof WindowParts, string> = {
  serverCacheMs: 'registry server cache',
  replicationMs: 'registry replication between servers',
  clientFetchMs: 'consumer registry fetch',
  balancerRefreshMs: 'consumer balancer refresh',
  endpointLagMs: 'endpoint propagation',
  marginMs: 'safety margin'
}

const zero: WindowParts = { serverCacheMs: 0, replicationMs: 0, clientFetchMs: 0, balancerRefreshMs: 0, endpointLagMs: 0, marginMs: 0 }

/**
 * Presets: defaults of the systems they are named after (see the README for sources).
 * - eureka-ribbon: read-only response cache 30 s + client fetch 30 s + Ribbon refresh 30 s.
 * - eureka-spring: the same with Spring Cloud LoadBalancer's 35 s cache TTL.
 * - eureka-node:   a Node consumer on eureka-js-client (fetch 30 s, no Ribbon hop).
 * - nacos:         UDP push normally lands in ~0.5 s; when it is lost the client polls
 *                  at cacheMillis (10 s), plus 1 s the SDK adds after a first subscribe.
 * - kubernetes:    EndpointSlice -> kube-proxy / ingress controller propagation.
 */
export const WINDOW_PRESETS = {
  'eureka-ribbon': { ...zero, serverCacheMs: 30_000, clientFetchMs: 30_000, balancerRefreshMs: 30_000 },
  'eureka-spring': { ...zero, serverCacheMs: 30_000, clientFetchMs: 30_000, balancerRefreshMs: 35_000 },
  'eureka-node': { ...zero, serverCacheMs: 30_000, clientFetchMs: 30_000 },
  nacos: { ...zero, serverCacheMs: 500, clientFetchMs: 10_000, marginMs: 1_000 },
  kubernetes: { ...zero, endpointLagMs: 15_000 },
  none: { ...zero }
} as const satisfies Record<string, WindowParts>

export type WindowPreset = keyof typeof WINDOW_PRESETS

/** A preset name, or parts (optionally starting from a preset), optionally scaled. */
export type WindowsInput = WindowPreset | (Partial<WindowParts> & {
  preset?: WindowPreset
  /** Multiplies every part: 0.01 turns 90 s into 0.9 s for tests and demos. */
  scale?: number
})

/** Every field of the object form, checked against the type by the compiler. */
const WINDOW_KEYS = {
  serverCacheMs: true, replicationMs: true, clientFetchMs: true, balancerRefreshMs: true, endpointLagMs: true, marginMs: true, preset: true, scale: true
} satisfies Record<keyof Exclude<WindowsInput, string>, true>

export interface WindowBreakdownItem { part: keyof WindowParts, ms: number, why: string }

export interface PropagationWindow {
  preset: WindowPreset | 'custom'
  totalMs: number
  parts: WindowParts
  breakdown: WindowBreakdownItem[]
}

export function isWindowPreset (name: unknown): name is WindowPreset {
  return typeof name === 'string' && Object.hasOwn(WINDOW_PRESETS, name)
}

/** Computes the propagation window and its breakdown. Throws InvalidOptionError on bad input. */
export function propagationWindow (input: WindowsInput = 'none', option = 'windows'): PropagationWindow {
  if (typeof input === 'string') {
    if (!isWindowPreset(input)) throw new InvalidOptionError(option, `unknown preset '${input}'; use one of ${Object.keys(WINDOW_PRESETS).join(', ')} or an object of parts`)
    return build(input, { ...WINDOW_PRESETS[input] })
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new InvalidOptionError(option, `expected a preset name or an object like { serverCacheMs, clientFetchMs, balancerRefreshMs }, got ${show(input)}`)
  }
  checkKeys(option, input, WINDOW_KEYS)
  if (input.preset !== undefined && !isWindowPreset(input.preset)) {
    throw new InvalidOptionError(`${option}.preset`, `unknown preset '${String(input.preset)}'; use one of ${Object.keys(WINDOW_PRESETS).join(', ')}`)
  }
  const parts: WindowParts = { ...(input.preset ? WINDOW_PRESETS[input.preset] : zero) }
  for (const part of WINDOW_PARTS) {
    const value = input[part]
    if (value === undefined) continue
    assertDuration(`${option}.${part}`, value)
    parts[part] = value
  }
  const scale = input.scale ?? 1
  if (typeof scale !== 'number' || !Number.isFinite(scale) || scale <= 0) {
    throw new InvalidOptionError(`${option}.scale`, `must be a positive finite number, got ${show(scale)}`)
  }
  if (scale !== 1) for (const part of WINDOW_PARTS) parts[part] = Math.round(parts[part] * scale)
  const custom = input.preset === undefined || WINDOW_PARTS.some((p) => input[p] !== undefined) || scale !== 1
  const window = build(custom ? 'custom' : input.preset!, parts)
  // Each part is finite, but their sum (or a part times scale) can overflow to Infinity.
  if (!Number.isFinite(window.totalMs)) throw new InvalidOptionError(option, 'the parts (times scale) add up to more than a finite number of milliseconds; use realistic durations')
  return window
}

function build (preset: WindowPreset | 'custom', parts: WindowParts): PropagationWindow {
  const breakdown: WindowBreakdownItem[] = []
  let totalMs = 0
  for (const part of WINDOW_PARTS) {
    totalMs += parts[part]
    if (parts[part] > 0) breakdown.push({ part, ms: parts[part], why: WHY[part] })
  }
  return { preset, totalMs, parts, breakdown }
}
