// Propagation on real Nacos 2.3.1 / 3.1.0: a lameduck provider (@lameduck/nacos) deregisters and
// registers again `drains` times while three consumers watch the service:
//   - the Java nacos-client 2.3.2 (gRPC, pushed), calling both providers round robin;
//   - @lameduck/nacos discovery with UDP push (push on);
//   - @lameduck/nacos discovery with push: false (polls every cacheMillis), or on transport 'v3'.
// Per drain and consumer: the time from deregister() resolving to the consumer's list without the
// instance (and, for the Java consumer, to its last request to it). Phase "push" runs with the
// server's 10 s cacheMillis, so only a push explains a drop within a second.
import { createServer, type Server } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import type { Instance } from '@lameduck/core'
import { nacosDiscovery, nacosRegistry, nacosWindows, type NacosDiscovery } from '@lameduck/nacos'
import { until } from '../../helpers.ts'
import { startJavaConsumer, type JavaConsumer } from './nacos-consumer.ts'
import { startModernNacos, type NacosVersion } from './nacos-modern.ts'

const SERVICE = 'orders'
const IP = '127.0.0.1'

export type ConsumerName = 'java-grpc' | 'node-push' | 'node-poll'

export interface Drain { consumer: ConsumerName, droppedMs: number, lastRequestMs?: number, requestsAfter?: number }

export interface PropagationRun {
  version: NacosVersion
  phase: 'push' | 'poll'
  /** The polling discovery's transport (push phase: v1). */
  transport: 'v1' | 'v3'
  /** The poll period: the server's cacheMillis (v1), or pollIntervalMs (v3). */
  cacheMillis: number
  drains: Drain[]
  window: ReturnType<typeof nacosWindows>
}

async function provider (): Promise<{ server: Server, port: number }> {
  const server = createServer((req, res) => { res.end('ok') })
  server.listen(0, IP)
  await once(server, 'listening')
  return { server, port: (server.address() as AddressInfo).port }
}

function instanceOf (port: number): Instance {
  return { id: `${IP}:${port}`, service: SERVICE, host: IP, port, status: 'UP', metadata: { 'lameduck.weight': '100' } }
}

interface Watcher { name: ConsumerName, has: (port: number) => boolean, lastChange: () => number, close: () => Promise<void> }

function nodeWatcher (name: ConsumerName, discovery: NacosDiscovery): Watcher {
  let ports: number[] = []
  let changedAt = 0
  discovery.subscribe(SERVICE, (list) => { ports = list.map((i) => i.port); changedAt = Date.now() })
  return { name, has: (port) => ports.includes(port), lastChange: () => changedAt, close: () => discovery.close() }
}

function javaWatcher (consumer: JavaConsumer): Watcher {
  return { name: 'java-grpc', has: (port) => consumer.ports().includes(port), lastChange: () => consumer.hosts.at(-1)?.t ?? 0, close: () => consumer.close() }
}

/**
 * Both phases on one server (one JVM start per version), `drains` each (`pollDrains` for push off). Push off: the Node
 * discovery with push: false polls at the server's cacheMillis, which 2.x/3.x never hand out below
 * 10 s (the pushCacheMillis switch's minimum), or with `pollTransport: 'v3'` (3.x) the 3.x client
 * API at `pollIntervalMs`. Each poll drain swaps two instances (one leaves as the other comes), so a
 * drain costs one poll period; it starts right after a poll, so it measures nearly the whole period.
 */
export async function measureNacosPropagation (version: NacosVersion, options: { drains?: number, pollDrains?: number, pollTransport?: 'v1' | 'v3', pollIntervalMs?: number, properties?: Record<string, string | number | boolean> } = {}): Promise<PropagationRun[]> {
  const drains = options.drains ?? 20
  const pollDrains = options.pollDrains ?? drains
  const pollTransport = options.pollTransport ?? 'v1'
  const pollIntervalMs = options.pollIntervalMs ?? 1_000
  const server = await startModernNacos(version, { properties: options.properties ?? {} })
  const providers = await Promise.all([provider(), provider(), provider()])
  const [leaving, staying, spare] = providers.map((p) => p.port) as [number, number, number]
  const registry = nacosRegistry({ serverList: server.serverList, beatIntervalMs: 2_000 })
  const watchers: Watcher[] = []
  let java: JavaConsumer | undefined
  try {
    await registry.register(instanceOf(staying))
    await registry.register(instanceOf(leaving))
    java = await startJavaConsumer(server.serverList, SERVICE)
    const pollDiscovery = pollTransport === 'v3'
      ? nacosDiscovery({ serverList: server.serverList, transport: 'v3', pollIntervalMs })
      : nacosDiscovery({ serverList: server.serverList, push: false })
    watchers.push(javaWatcher(java), nodeWatcher('node-push', nacosDiscovery({ serverList: server.serverList })), nodeWatcher('node-poll', pollDiscovery))
    const runs: PropagationRun[] = []
    // Push on: one instance leaves and comes back, the Java and the pushed Node consumer watch.
    const push: PropagationRun = { version, phase: 'push', transport: 'v1', cacheMillis: 10_000, drains: [], window: nacosWindows({ cacheMillis: 10_000 }) }
    const pushed = watchers.filter((w) => w.name !== 'node-poll')
    for (let i = 0; i < drains; i++) {
      await steady(pushed, leaving, java)
      await registry.deregister(instanceOf(leaving))
      const t0 = Date.now()
      const dropped = await dropTimes(pushed, leaving, t0, 15_000, `push drain ${i + 1}`)
      // A request already begun may still be logged after the list changed: let it land.
      await new Promise((resolve) => setTimeout(resolve, 50))
      for (const w of pushed) {
        const drain: Drain = { consumer: w.name, droppedMs: dropped.get(w.name)! }
        if (w.name === 'java-grpc') {
          const after = java.requests.filter((r) => r.port === leaving && r.t >= t0)
          drain.lastRequestMs = Math.max(0, ...after.map((r) => r.t - t0))
          drain.requestsAfter = after.length
        }
        push.drains.push(drain)
      }
      await registry.register(instanceOf(leaving))
    }
    runs.push(push)
    // Push off: the polling discovery alone; `leaving` and `spare` take turns.
    const period = pollTransport === 'v3' ? pollIntervalMs : 10_000
    const poll: PropagationRun = { version, phase: 'poll', transport: pollTransport, cacheMillis: period, drains: [], window: nacosWindows({ cacheMillis: period, push: false }) }
    const polled = watchers.filter((w) => w.name === 'node-poll')
    let [current, next] = [leaving, spare]
    for (let i = 0; i < pollDrains; i++) {
      await steady(polled, current, undefined)
      await registry.deregister(instanceOf(current))
      const t0 = Date.now()
      await registry.register(instanceOf(next))
      const dropped = await dropTimes(polled, current, t0, period * 2 + 5_000, `poll drain ${i + 1}`)
      poll.drains.push({ consumer: 'node-poll', droppedMs: dropped.get('node-poll')! });
      [current, next] = [next, current]
    }
    runs.push(poll)
    return runs
  } catch (err) {
    if (java !== undefined) (err as Error).message += `\nJava consumer stderr:\n${java.tail()}`
    throw err
  } finally {
    await registry.close()
    for (const w of watchers) await w.close()
    if (!watchers.some((w) => w.name === 'java-grpc')) await java?.close()
    for (const p of providers) p.server.close()
    await server.close()
  }
}

/** Waits until every watcher has dropped `port`; each one's drop time after t0. */
async function dropTimes (watchers: Watcher[], port: number, t0: number, timeoutMs: number, what: string): Promise<Map<ConsumerName, number>> {
  const dropped = new Map<ConsumerName, number>()
  await waitUntil(() => {
    for (const w of watchers) if (!dropped.has(w.name) && !w.has(port)) dropped.set(w.name, Math.max(0, w.lastChange() - t0))
    return dropped.size === watchers.length
  }, () => `every consumer to drop the instance (${what}: ${watchers.filter((w) => !dropped.has(w.name)).map((w) => w.name).join(', ')} still list it)`, timeoutMs)
  return dropped
}

/** until(), naming the slow consumer when it times out. */
async function waitUntil (fn: () => boolean, what: () => string, timeoutMs: number): Promise<void> {
  try {
    await until(fn, 'the condition', { timeoutMs, intervalMs: 5 })
  } catch {
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what()}`)
  }
}

/** Every measured consumer lists the leaving instance again, and the Java one has called it since. */
async function steady (measured: Watcher[], leaving: number, java: JavaConsumer | undefined): Promise<void> {
  const waiting = (): string[] => measured.filter((w) => !w.has(leaving)).map((w) => w.name)
  await waitUntil(() => waiting().length === 0, () => `the consumers to list the instance again (still without it: ${waiting().join(', ')})`, 30_000)
  if (java !== undefined) {
    const back = java.hosts.findLast((h) => h.ports.includes(leaving))?.t ?? Infinity
    await until(() => java.requests.some((r) => r.port === leaving && r.t > back), 'the Java consumer calling the instance again', 30_000)
  }
}

export function summarize (run: PropagationRun, consumer: ConsumerName): { n: number, min: number, p50: number, p95: number, max: number, lastRequestMax: number } {
  const rows = run.drains.filter((d) => d.consumer === consumer)
  const sorted = rows.map((d) => d.droppedMs).sort((a, b) => a - b)
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
  return { n: rows.length, min: sorted[0] ?? 0, p50: at(0.5), p95: at(0.95), max: sorted.at(-1) ?? 0, lastRequestMax: Math.max(0, ...rows.map((d) => d.lastRequestMs ?? 0)) }
}

/** A markdown table: per server, phase and consumer, the measurement beside nacosWindows()'s terms. */
export function propagationTable (runs: PropagationRun[]): string {
  const lines = ['| server | consumer | push | cacheMillis | drains | list dropped after deregister(): min / p50 / p95 / max (ms) | last request (ms, Java) | push term: pushDelay + check (ms) | total window (ms) |',
    '|---|---|---|---|---|---|---|---|---|']
  for (const run of runs) {
    const total = Object.values(run.window).reduce((a, b) => a + b, 0)
    for (const consumer of ['java-grpc', 'node-push', 'node-poll'] as const) {
      const s = summarize(run, consumer)
      if (s.n === 0) continue
      lines.push(`| Nacos ${run.version} | ${consumer}${consumer === 'node-poll' ? ` (${run.transport})` : ''} | ${run.phase === 'push' ? 'on' : 'off'} | ${run.cacheMillis} | ${s.n} | ${s.min} / ${s.p50} / ${s.p95} / ${s.max} | ${consumer === 'java-grpc' ? s.lastRequestMax : '—'} | ${run.window.serverCacheMs} | ${total} |`)
    }
  }
  return lines.join('\n')
}
