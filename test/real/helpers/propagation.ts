// Measures "DELETE answered → a consumer's last request to the leaving instance" on the real paths:
//   real Eureka server → Java Eureka client → Spring Cloud LoadBalancer (→ RestClient)
//   real Eureka server → eureka-js-client (Node)
// with every period at its default × SCALE, over many drains of lameduck providers, and splits
// each delay into the hops eurekaWindows() adds up: server read-only cache, client fetch, balancer.
import { propagationWindow, type WindowParts } from '@lameduck/core'
import { eurekaWindows } from '@lameduck/eureka'
import { startJavaConsumer, startRealEureka, type CallLine } from './eureka.ts'
import { startNodeConsumer } from './node-consumer.ts'
import { startProvider, type Provider } from './providers.ts'
import { Server } from 'node:http'

/** Production defaults (Netflix / Spring Cloud) the measurement scales. */
export const DEFAULTS = {
  responseCacheUpdateIntervalMs: 30_000,
  registryFetchIntervalSeconds: 30,
  loadBalancerCacheTtlMs: 35_000,
  heartbeatIntervalMs: 30_000,
  leaseDurationSecs: 90
}

export interface Settings {
  scale: number
  responseCacheUpdateIntervalMs: number
  /** Whole seconds: eureka.client.registry-fetch-interval-seconds is an int, so 1 s is its floor. */
  registryFetchIntervalSeconds: number
  loadBalancerCacheTtlMs: number
  heartbeatIntervalMs: number
  leaseDurationSecs: number
}

export function scaled (scale: number): Settings {
  const fetchSecs = DEFAULTS.registryFetchIntervalSeconds * scale
  if (!Number.isInteger(fetchSecs) || fetchSecs < 1) {
    throw new Error(`scale ${scale} gives a registry fetch interval of ${fetchSecs} s; the Java client takes whole seconds ≥ 1 (scale a multiple of 1/30)`)
  }
  return {
    scale,
    responseCacheUpdateIntervalMs: Math.round(DEFAULTS.responseCacheUpdateIntervalMs * scale),
    registryFetchIntervalSeconds: fetchSecs,
    loadBalancerCacheTtlMs: Math.round(DEFAULTS.loadBalancerCacheTtlMs * scale),
    heartbeatIntervalMs: Math.round(DEFAULTS.heartbeatIntervalMs * scale),
    leaseDurationSecs: Math.max(3, Math.round(DEFAULTS.leaseDurationSecs * scale))
  }
}

export type Path = 'java' | 'node'

/** One consumer's view of one drain, in ms after the DELETE was answered. */
export interface Hop {
  /** The consumer's registry cache (Eureka client / eureka-js-client) no longer lists it: its first call whose list lacks it. */
  clientDropMs: number
  /** Its last call whose list still had it (the drop came after this, before clientDropMs). */
  clientKeptMs: number
  /** Its last request to the leaving instance (0 when it sent none after the DELETE). */
  lastCallMs: number
}

/** One drain: the server term, and each consumer's hops (consumers named java-1, node-2, ...). */
export interface Drain { provider: string, serverDropMs: number, hops: Record<string, Hop> }

export interface Measurement {
  settings: Settings
  windows: Record<Path, WindowParts>
  drains: Drain[]
  /** Requests that did not get a 200, per path, from each consumer's first 200 on. */
  failed: Record<Path, number>
  requests: Record<Path, number>
  /** Examples of the failures. */
  errors: string[]
  /** Negative control (naiveControl): requests that failed after a provider deregistered and closed at once. */
  naiveFailed?: number
}

export function windowsFor (s: Settings): Record<Path, WindowParts> {
  const common = { responseCacheUpdateIntervalMs: s.responseCacheUpdateIntervalMs, registryFetchIntervalMs: s.registryFetchIntervalSeconds * 1_000 }
  return { java: eurekaWindows({ ...common, balancer: s.loadBalancerCacheTtlMs }), node: eurekaWindows({ ...common, balancer: 'none' }) }
}

/** mulberry32: seeded, so a run's phases can be replayed. */
export function prng (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

function hop (calls: CallLine[], id: string, t0: number, until: number): Hop {
  const after = calls.filter((c) => c.t >= t0 && c.t < until)
  const drop = after.find((c) => !c.known.includes(id))
  const kept = after.filter((c) => c.known.includes(id) && (drop === undefined || c.t < drop.t)).at(-1)
  const last = after.filter((c) => c.instance === id).at(-1)
  return { clientDropMs: drop ? drop.t - t0 : Number.NaN, clientKeptMs: kept ? kept.t - t0 : 0, lastCallMs: last ? last.t - t0 : 0 }
}

export interface MeasureOptions {
  scale: number
  drains: number
  providers?: number
  /** Consumers per path. Each fetches at its own phase against the server's cache tick (a consumer's
   * phase barely moves during a run), so several phases are sampled. Default java 2, node 3. */
  consumers?: Record<Path, number>
  seed?: number
  /** After the drains, one provider deregisters and closes at once (no window): its losses must show. */
  naiveControl?: boolean
  log?: (line: string) => void
}

interface Rig {
  s: Settings
  windows: Record<Path, WindowParts>
  eurekaUrl: string
  providers: Provider[]
  /** Each consumer's calls, by name (java-1, node-1, ...). */
  calls: Record<string, CallLine[]>
  /** The server's full-fetch view, polled every 25 ms. */
  serverView: Array<{ t: number, ids: string[] }>
}

export async function measurePropagation (o: MeasureOptions): Promise<Measurement> {
  const stoppers: Array<() => Promise<void>> = []
  try {
    const rig = await startRig(o, stoppers)
    const drains = await runDrains(rig, o)
    const controlAt = o.naiveControl ? await naiveExit(rig) : Number.POSITIVE_INFINITY
    return { settings: rig.s, windows: rig.windows, drains, ...countFailures(rig.calls, controlAt) }
  } finally {
    for (const stop of stoppers) await stop().catch(() => {})
  }
}

/** The server, the consumers (Java first: they start slowest), the providers and the server poller. */
async function startRig (o: MeasureOptions, stoppers: Array<() => Promise<void>>): Promise<Rig> {
  const s = scaled(o.scale)
  const windows = windowsFor(s)
  const server = await startRealEureka({ responseCacheUpdateIntervalMs: s.responseCacheUpdateIntervalMs })
  stoppers.unshift(() => server.stop())
  const counts = o.consumers ?? { java: 2, node: 3 }
  const fetchMs = s.registryFetchIntervalSeconds * 1_000
  const calls: Record<string, CallLine[]> = {}
  const javas: Array<Awaited<ReturnType<typeof startJavaConsumer>>> = []
  for (let i = 1; i <= counts.java; i++) {
    const java = await startJavaConsumer({ eurekaUrl: server.eurekaUrl, registryFetchIntervalSeconds: s.registryFetchIntervalSeconds, cacheTtlMs: s.loadBalancerCacheTtlMs, name: `java-${i}` })
    stoppers.unshift(() => java.stop())
    javas.push(java)
    calls[`java-${i}`] = java.calls
  }
  for (let i = 1; i <= counts.node; i++) {
    // Staggered starts spread the Node consumers' fetch phases over the fetch period.
    await sleep(Math.floor(fetchMs / counts.node))
    const node = await startNodeConsumer({ serviceUrl: server.serviceUrl, registryFetchIntervalMs: fetchMs })
    stoppers.unshift(() => node.stop())
    calls[`node-${i}`] = node.calls
  }
  // Every provider plans for the slower (Java) path: its drain lasts that window.
  const providers: Provider[] = []
  stoppers.unshift(async () => { await Promise.all(providers.map((p) => p.close())) })
  for (let i = 0; i < (o.providers ?? 5); i++) {
    providers.push(await startProvider({ eurekaUrl: server.eurekaUrl, heartbeatIntervalMs: s.heartbeatIntervalMs, leaseDurationSecs: s.leaseDurationSecs, windows: windows.java }))
  }
  for (const java of javas) {
    await java.load(true)
    stoppers.unshift(() => java.load(false))
  }
  const serverView: Rig['serverView'] = []
  const poll = { on: true }
  const poller = (async () => {
    while (poll.on) {
      const t = Date.now()
      try {
        const r = await fetch(`${server.eurekaUrl}/apps/ORDERS`, { headers: { accept: 'application/json' } })
        const body = r.status === 200 ? await r.json() as any : undefined
        serverView.push({ t, ids: ((body?.application?.instance ?? []) as Array<{ instanceId: string }>).map((i) => i.instanceId) })
      } catch { /* next round */ }
      await sleep(25)
    }
  })()
  stoppers.unshift(async () => { poll.on = false; await poller })
  return { s, windows, eurekaUrl: server.eurekaUrl, providers, calls, serverView }
}

/** Drains the providers in turn, each once every consumer routes to it and two others stay routable. */
async function runDrains (rig: Rig, o: MeasureOptions): Promise<Drain[]> {
  const { s, providers, calls } = rig
  const random = prng(o.seed ?? 18)
  const draining = new Set<Provider>()
  const onlineAt = new Map<Provider, number>(providers.map((p) => [p, p.registeredAt]))
  const seenBy = (p: Provider, cs: CallLine[]): boolean => cs.some((c) => c.instance === p.id && c.t > onlineAt.get(p)!)
  const seenSince = (p: Provider): boolean => Object.values(calls).every((cs) => seenBy(p, cs))
  const pending: Array<Promise<void>> = []
  const drains: Drain[] = []
  for (let n = 0; n < o.drains; n++) {
    const p = providers[n % providers.length]!
    const waitStart = Date.now()
    let told = waitStart
    while (draining.has(p) || !seenSince(p) || providers.filter((q) => q !== p && !draining.has(q) && seenSince(q)).length < 2) {
      // A slow consumer (a JVM starved of CPU, a fetch that failed) holds the next drain: say which, and wait for it.
      if (Date.now() - told >= 20_000) {
        told = Date.now()
        o.log?.(`drain ${n + 1}: waiting ${Math.round((told - waitStart) / 1000)} s for ${slowConsumers(calls, p, seenBy).join('; ') || 'the other providers to come back'}`)
      }
      if (Date.now() - waitStart > 120_000) throw new Error(`drain ${n + 1}: ${p.id} not routed to again within 120 s by ${slowConsumers(calls, p, seenBy).join('; ') || '(every consumer routes to it; the other providers did not come back)'}`)
      await sleep(50)
    }
    await sleep(Math.floor(random() * s.responseCacheUpdateIntervalMs))
    draining.add(p)
    pending.push((async () => {
      await p.app.lameduck.offline()
      const t0 = p.deregisteredAt
      // Still offline: every request it gets now comes from a stale cache. One more fetch
      // period, then it comes back.
      await sleep(s.registryFetchIntervalSeconds * 1_000)
      const end = Date.now()
      const drop = rig.serverView.find((v) => v.t >= t0 && !v.ids.includes(p.id))
      const d: Drain = {
        provider: p.id,
        serverDropMs: drop ? drop.t - t0 : Number.NaN,
        hops: Object.fromEntries(Object.entries(calls).map(([name, cs]) => [name, hop(cs, p.id, t0, end)]))
      }
      drains.push(d)
      o.log?.(`drain ${drains.length}: ${p.id} server cache ${d.serverDropMs} ms; ${Object.entries(d.hops).map(([k, h]) => `${k} cache ${h.clientDropMs} last ${h.lastCallMs}`).join(', ')}`)
      await p.app.lameduck.online()
      onlineAt.set(p, p.registeredAt)
      draining.delete(p)
    })())
  }
  await Promise.all(pending)
  return drains
}

/** The consumers that have not routed to `p` since it came back, each with what it did last. */
export function slowConsumers (calls: Record<string, CallLine[]>, p: Provider, seenBy: (p: Provider, cs: CallLine[]) => boolean): string[] {
  return Object.entries(calls).filter(([, cs]) => !seenBy(p, cs)).map(([name, cs]) => {
    const last = cs.at(-1)
    if (last === undefined) return `${name} (no call yet)`
    return `${name} (last call ${Date.now() - last.t} ms ago to ${last.instance ?? 'nobody'}, ${last.status}${last.error ? ` ${last.error}` : ''}; ${last.known.includes(p.id) ? 'lists' : 'does not list'} ${p.id})`
  })
}

/** Negative control: deregistered, then gone at once, the way a service without lameduck exits. */
async function naiveExit (rig: Rig): Promise<number> {
  const p = rig.providers[0]!
  const res = await fetch(`${rig.eurekaUrl}/apps/ORDERS/${p.id}`, { method: 'DELETE' })
  if (res.status !== 200) throw new Error(`naive control: DELETE answered ${res.status}`)
  const at = Date.now()
  p.app.server.closeAllConnections()
  // Node's own close, not the server's: lameduck holds an app's server.close() until its drain is over.
  Server.prototype.close.call(p.app.server)
  await sleep(propagationWindow(rig.windows.java).totalMs)
  return at
}

/**
 * Failures from each consumer's first 200 until the negative control; the control's own after it.
 * A call still open when the control cut every connection (it ended at or after controlAt) is the
 * control's, whenever it started: CI once counted such a call, reset by the control's
 * closeAllConnections() a few ms after it left the consumer, as a lameduck loss.
 */
function countFailures (calls: Record<string, CallLine[]>, controlAt: number): Pick<Measurement, 'failed' | 'requests' | 'errors' | 'naiveFailed'> {
  const control = (c: CallLine): boolean => c.t + c.ms >= controlAt
  const failed = { java: 0, node: 0 }
  const requests = { java: 0, node: 0 }
  const errors: string[] = []
  for (const [name, cs] of Object.entries(calls)) {
    const path = name.split('-')[0] as Path
    const first = cs.findIndex((x) => x.status === 200)
    for (const c of cs.slice(Math.max(0, first))) {
      if (control(c)) continue
      requests[path]++
      if (c.status === 200) continue
      failed[path]++
      if (errors.length < 10) errors.push(`${name} ${new Date(c.t).toISOString()} (${c.ms} ms, ${controlAt - c.t} ms before the control) ${c.instance ?? ''} ${c.status} ${c.error ?? ''}`)
    }
  }
  const naiveFailed = Number.isFinite(controlAt) ? Object.values(calls).flat().filter((c) => control(c) && c.status !== 200).length : undefined
  return { failed, requests, errors, naiveFailed }
}

/**
 * `maxLowMs`: the term's maximum from the sure side of its samples. A consumer's drop lies between its
 * last call that still listed the instance and its first that did not; a starved consumer can call
 * seconds apart, so the fetch term is also taken from the last call that still listed it. That
 * side cannot run over because of a sampling gap, only because the term itself did.
 */
export interface Row { term: string, windowMs: number, maxMs: number, medianMs: number, maxLowMs: number }

const stat = (xs: number[]): { max: number, median: number } => {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  return { max: v.at(-1) ?? Number.NaN, median: v[Math.floor(v.length / 2)] ?? Number.NaN }
}

/**
 * Term by term: the server term is DELETE → the read-only cache drops it; the fetch term is that →
 * the client's registry cache drops it; the balancer term is that → the last request. The rows'
 * maxima come from different drains, so they need not add up to the total's maximum.
 */
export function rows (m: Measurement, path: Path): Row[] {
  const w = m.windows[path]
  const server = m.drains.map((d) => d.serverDropMs)
  const hops = m.drains.flatMap((d) => Object.entries(d.hops).filter(([k]) => k.startsWith(`${path}-`)).map(([, h]) => ({ d, h })))
  const fetch = hops.map(({ d, h }) => h.clientDropMs - d.serverDropMs)
  const fetchLow = hops.map(({ d, h }) => h.clientKeptMs - d.serverDropMs)
  const balancer = hops.map(({ h }) => Math.max(0, h.lastCallMs - h.clientDropMs))
  const total = hops.map(({ h }) => h.lastCallMs)
  const r = (term: string, windowMs: number, xs: number[], low = xs): Row => ({ term, windowMs, maxMs: stat(xs).max, medianMs: stat(xs).median, maxLowMs: stat(low).max })
  return [
    r('serverCacheMs (read-only cache tick)', w.serverCacheMs, server),
    r('clientFetchMs (registry fetch)', w.clientFetchMs, fetch, fetchLow),
    r('balancerRefreshMs (LoadBalancer cache)', w.balancerRefreshMs, balancer),
    r('total: DELETE → last request', propagationWindow(w).totalMs, total)
  ]
}

export function table (m: Measurement): string {
  const s = m.settings
  const consumers = Object.keys(m.drains[0]?.hops ?? {})
  const out = [
    `Scale ${s.scale}: read-only cache ${s.responseCacheUpdateIntervalMs} ms, registry fetch ${s.registryFetchIntervalSeconds} s, LoadBalancer cache TTL ${s.loadBalancerCacheTtlMs} ms, heartbeat ${s.heartbeatIntervalMs} ms; ${m.drains.length} drains seen by ${consumers.length} consumers (${consumers.join(', ')}).`,
    '',
    '| path | term | window (eurekaWindows) | measured max | max, sure side | measured median |',
    '|---|---|---:|---:|---:|---:|'
  ]
  const names: Record<Path, string> = { java: 'real Eureka → Java Eureka client → Spring Cloud LoadBalancer', node: 'real Eureka → eureka-js-client' }
  for (const path of ['java', 'node'] as const) {
    for (const row of rows(m, path)) out.push(`| ${names[path]} | ${row.term} | ${row.windowMs} | ${row.maxMs} | ${row.maxLowMs} | ${row.medianMs} |`)
  }
  out.push('', `Requests not answered 200 (from each consumer's first 200 on): Java ${m.failed.java} of ${m.requests.java}, Node ${m.failed.node} of ${m.requests.node}.`)
  if (m.naiveFailed !== undefined) out.push(`Negative control, a provider that deregisters and closes at once: ${m.naiveFailed} requests failed.`)
  return out.join('\n')
}
