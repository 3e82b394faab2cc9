// The real Eureka server (test/real/eureka-server) and the Java consumer (test/real/eureka-consumer),
// configured through their own Spring properties only.
import { until } from '@lameduck/test-utils'
import { startJar, type Jvm } from './jvm.ts'

/** Server settings in ms, named like the devkit stand-in's options so one suite can drive both. */
export interface RealEurekaOptions {
  responseCacheUpdateIntervalMs?: number
  useReadOnlyCache?: boolean
  evictionIntervalTimerInMs?: number
  selfPreservation?: boolean
  renewalPercentThreshold?: number
  expectedClientRenewalIntervalSeconds?: number
  retentionTimeInMSInDeltaQueue?: number
  deltaRetentionTimerIntervalInMs?: number
  peerEurekaNodesUpdateIntervalMs?: number
  name?: string
}

export interface RealEureka extends Jvm {
  /** Base URL as lameduck's `url` option takes it: http://127.0.0.1:P/eureka */
  eurekaUrl: string
  /** The apps endpoint eureka-js-client builds: http://127.0.0.1:P/eureka/apps/ */
  serviceUrl: string
}

const PROPERTY: Record<Exclude<keyof RealEurekaOptions, 'name'>, string> = {
  responseCacheUpdateIntervalMs: 'eureka.server.response-cache-update-interval-ms',
  useReadOnlyCache: 'eureka.server.use-read-only-response-cache',
  evictionIntervalTimerInMs: 'eureka.server.eviction-interval-timer-in-ms',
  selfPreservation: 'eureka.server.enable-self-preservation',
  renewalPercentThreshold: 'eureka.server.renewal-percent-threshold',
  expectedClientRenewalIntervalSeconds: 'eureka.server.expected-client-renewal-interval-seconds',
  retentionTimeInMSInDeltaQueue: 'eureka.server.retention-time-in-m-s-in-delta-queue',
  deltaRetentionTimerIntervalInMs: 'eureka.server.delta-retention-timer-interval-in-ms',
  peerEurekaNodesUpdateIntervalMs: 'eureka.server.peer-eureka-nodes-update-interval-ms'
}

export function serverArgs (options: RealEurekaOptions): string[] {
  const args: string[] = []
  for (const [key, property] of Object.entries(PROPERTY)) {
    const v = options[key as keyof typeof PROPERTY]
    if (v !== undefined) args.push(`--${property}=${String(v)}`)
  }
  return args
}

export async function startRealEureka (options: RealEurekaOptions = {}): Promise<RealEureka> {
  const jvm = await startJar('eureka-server', serverArgs(options), options.name ?? 'eureka-server')
  const eurekaUrl = `${jvm.url}/eureka`
  // Listening is not serving: wait for the registry to answer a full fetch.
  await waitFor(async () => (await fetch(`${eurekaUrl}/apps/`, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(5_000) })).status === 200, `${jvm.name} to answer GET /eureka/apps/`, jvm)
  return { ...jvm, eurekaUrl, serviceUrl: `${eurekaUrl}/apps/` }
}

/** Two peers that replicate to each other (Spring Cloud's peer-aware registry). */
export async function startRealEurekaCluster (a: RealEurekaOptions = {}, b: RealEurekaOptions = a): Promise<[RealEureka, RealEureka]> {
  const [p1, p2] = await Promise.all([startRealEureka({ name: 'eureka-peer-1', ...a }), startRealEureka({ name: 'eureka-peer-2', ...b })])
  try {
    for (const [self, peer] of [[p1, p2], [p2, p1]] as const) {
      const res = await fetch(`${self.url}/lab/peers?urls=${encodeURIComponent(`${peer.eurekaUrl}/`)}`, { method: 'POST', signal: AbortSignal.timeout(30_000) })
      if (res.status !== 200) throw new Error(`${self.name}: POST /lab/peers answered ${res.status}`)
    }
  } catch (err) {
    await Promise.all([p1.stop(), p2.stop()])
    throw err
  }
  return [p1, p2]
}

export interface ConsumerOptions {
  eurekaUrl: string
  /** eureka.client.registry-fetch-interval-seconds: an int, 1 at least. */
  registryFetchIntervalSeconds: number
  /** spring.cloud.loadbalancer.cache.ttl in ms. */
  cacheTtlMs: number
  /** spring.cloud.loadbalancer.configurations, e.g. 'weighted'. */
  configurations?: string
  target?: string
  /** The provider route it calls (lab.path), default /hello. */
  path?: string
  intervalMs?: number
  name?: string
}

export interface CallLine { lab: 'call', target: string, t: number, ms: number, instance: string | null, status: number, error: string | null, known: string[] }

export interface JavaConsumer extends Jvm {
  calls: CallLine[]
  load: (on: boolean) => Promise<void>
}

export async function startJavaConsumer (o: ConsumerOptions): Promise<JavaConsumer> {
  if (!Number.isInteger(o.registryFetchIntervalSeconds) || o.registryFetchIntervalSeconds < 1) {
    throw new Error(`registryFetchIntervalSeconds must be an integer ≥ 1 (the property is an int of seconds), got ${o.registryFetchIntervalSeconds}`)
  }
  const args = [
    `--eureka.client.service-url.defaultZone=${o.eurekaUrl}/`,
    `--eureka.client.registry-fetch-interval-seconds=${o.registryFetchIntervalSeconds}`,
    `--spring.cloud.loadbalancer.cache.ttl=${o.cacheTtlMs}ms`,
    `--lab.target=${o.target ?? 'orders'}`,
    `--lab.interval-ms=${o.intervalMs ?? 20}`
  ]
  if (o.path) args.push(`--lab.path=${o.path}`)
  if (o.configurations) args.push(`--spring.cloud.loadbalancer.configurations=${o.configurations}`)
  const jvm = await startJar('eureka-consumer', args, o.name ?? 'java-consumer')
  const calls: CallLine[] = []
  const take = (line: string): void => {
    if (!line.startsWith('{"lab":"call"')) return
    try { calls.push(JSON.parse(line) as CallLine) } catch { /* a torn line */ }
  }
  for (const line of jvm.lines) take(line)
  jvm.onLine(take)
  const load = async (on: boolean): Promise<void> => {
    const res = await fetch(`${jvm.url}/lab/load?on=${on}`, { method: 'POST', signal: AbortSignal.timeout(30_000) })
    if (res.status !== 200) throw new Error(`${jvm.name}: POST /lab/load answered ${res.status}`)
  }
  return { ...jvm, calls, load }
}

export async function waitFor (fn: () => Promise<boolean> | boolean, what: string, jvm?: Jvm, timeoutMs = 60_000): Promise<void> {
  try {
    await until(async () => { try { return await fn() } catch { return false /* not yet */ } }, what, { timeoutMs, intervalMs: 50 })
  } catch (err) {
    throw jvm ? new Error(`${(err as Error).message}\n${jvm.tail()}`, { cause: err }) : err
  }
}
