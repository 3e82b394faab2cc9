// kubernetesDiscovery()'s options, validated once with core's kit.
import { backoff, checkKeys, count, duration, flag, InvalidOptionError, record, show, silentLogger, systemClock, withMethods } from '@lameduck/core'
import type { BackoffOptions, Clock, Logger } from '@lameduck/core'
import type { PortChoice } from './endpoint-slices.ts'

export interface KubeconfigOption {
  /** Default: the first file of $KUBECONFIG, else ~/.kube/config. */
  path?: string
  /** Default: the file's current-context. */
  context?: string
}

export interface KubernetesDiscoveryOptions {
  /** The Service (or Services) to watch at once. Others are watched from the first time they are asked for. */
  service?: string | readonly string[]
  /** Default: the pod's own namespace in-cluster, the kubeconfig context's, else 'default'. */
  namespace?: string
  /** The port to route to: the Service port's name, or the target port's number. Default: the only port. */
  port?: string | number
  /** Connect with a kubeconfig (development): a path, or { path, context }. */
  kubeconfig?: string | KubeconfigOption
  /** Connect as the pod's service account. Default: true when KUBERNETES_SERVICE_HOST is set and no kubeconfig is given. */
  inCluster?: boolean
  /** Published as lameduck.warmup with instances first seen ready after the first list, so the balancer ramps them. Default 0 (no ramp). */
  warmupMs?: number
  /** Read the pods' lameduck.dev/registered-at annotation for the endpoints of the first list (needs `pods: list`). Default false. */
  podAnnotations?: boolean
  /** Relist everything this often, whatever the watch says. Default 600 000. */
  resyncMs?: number
  /** Base of the watch's timeoutSeconds (each watch asks for 1-2x this). Default 300 000. */
  watchTimeoutMs?: number
  /** A watch still open this long after its timeoutSeconds is cut as hung. Default 30 000. */
  watchGraceMs?: number
  /** Headers of any answer, and a whole list page, within this. Default 10 000. */
  requestTimeoutMs?: number
  /** Largest watch event (one JSON line); a list page may be 4x this. Default 16 MiB. */
  maxEventBytes?: number
  /** Most endpoints kept per Service. Default 20 000. */
  maxEndpoints?: number
  /** After a failure (core BackoffOptions). Default { initialMs: 500, maxMs: 30000, factor: 2, jitter: 0.2 }. */
  backoff?: BackoffOptions
  logger?: Logger
  clock?: Clock
}

export interface ResolvedOptions {
  services: string[]
  namespace: string
  port: PortChoice
  warmupMs: number
  podAnnotations: boolean
  resyncMs: number
  watchTimeoutMs: number
  watchGraceMs: number
  requestTimeoutMs: number
  maxEventBytes: number
  maxEndpoints: number
  backoff: Required<BackoffOptions>
  logger: Logger
  clock: Clock
}

const KEYS = {
  service: true, namespace: true, port: true, kubeconfig: true, inCluster: true, warmupMs: true, podAnnotations: true, resyncMs: true, watchTimeoutMs: true, watchGraceMs: true, requestTimeoutMs: true, maxEventBytes: true, maxEndpoints: true, backoff: true, logger: true, clock: true
} satisfies Record<keyof KubernetesDiscoveryOptions, true>

/** A DNS label as Kubernetes names Services and namespaces (RFC 1123, at most 63). */
const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/

export function dnsLabel (option: string, value: unknown): string {
  if (typeof value !== 'string' || !LABEL.test(value)) {
    throw new InvalidOptionError(option, `must be a Kubernetes name (lower-case letters, digits and '-', at most 63, such as 'orders'), got ${show(value)}`)
  }
  return value
}

function portChoice (value: unknown): PortChoice {
  if (value === undefined) return undefined
  if (typeof value === 'number') return count('port', value, 1, { min: 1, max: 65_535 })
  if (typeof value === 'string' && /^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$/.test(value)) return value
  throw new InvalidOptionError('port', `must be a port name as the Service names it (such as 'http') or a port number 1..65535, got ${show(value)}`)
}

/** Everything but the connection (kubeconfig/inCluster), which connect.ts resolves. */
export function resolveOptions (input: unknown, defaultNamespace: string | undefined): ResolvedOptions {
  const o = record('kubernetesDiscovery(options)', input ?? {}, "{ service: 'orders', port: 'http' }") as KubernetesDiscoveryOptions
  checkKeys('', o, KEYS)
  const services = o.service === undefined ? [] : Array.isArray(o.service) ? o.service.map((s, i) => dnsLabel(`service[${i}]`, s)) : [dnsLabel('service', o.service)]
  const resyncMs = duration('resyncMs', o.resyncMs, 600_000, { positive: true })
  return {
    services,
    namespace: o.namespace === undefined ? defaultNamespace ?? 'default' : dnsLabel('namespace', o.namespace),
    port: portChoice(o.port),
    warmupMs: duration('warmupMs', o.warmupMs, 0),
    podAnnotations: flag('podAnnotations', o.podAnnotations, false),
    resyncMs,
    watchTimeoutMs: duration('watchTimeoutMs', o.watchTimeoutMs, 300_000, { positive: true }),
    watchGraceMs: duration('watchGraceMs', o.watchGraceMs, 30_000),
    requestTimeoutMs: duration('requestTimeoutMs', o.requestTimeoutMs, 10_000, { positive: true }),
    maxEventBytes: count('maxEventBytes', o.maxEventBytes, 16 * 1024 * 1024, { min: 1024 }),
    maxEndpoints: count('maxEndpoints', o.maxEndpoints, 20_000, { min: 1 }),
    backoff: backoff('backoff', o.backoff, { initialMs: 500, maxMs: 30_000 }),
    logger: o.logger === undefined ? silentLogger : withMethods<Logger>('logger', o.logger, ['debug', 'info', 'warn', 'error'], 'a pino-compatible logger'),
    clock: o.clock === undefined ? systemClock : withMethods<Clock>('clock', o.clock, ['now', 'setTimeout', 'clearTimeout'], 'a Clock (systemClock or virtualClock())')
  }
}
