// One registry under test, the devkit stand-in or the real Netflix Eureka server, started with the
// same settings, plus the raw HTTP calls of the conformance suite.
import { startEureka } from '@lameduck/devkit'
import { until as pollUntil } from '@lameduck/test-utils'
import { startRealEureka, startRealEurekaCluster, type RealEurekaOptions } from './eureka.ts'

export interface Target {
  kind: 'stand-in' | 'real'
  /** http://127.0.0.1:P/eureka */
  url: string
  /** eureka-js-client serviceUrls entry */
  serviceUrl: string
  /** A second peer replicating with `url`, when the target has peer replication. */
  peerUrl?: string
  close: () => Promise<void>
}

/** Settings the suite runs with: scaled periods, the same keys on both sides. */
export const SUITE = {
  responseCacheUpdateIntervalMs: 1_000,
  evictionIntervalTimerInMs: 500,
  expectedClientRenewalIntervalSeconds: 1
} as const

export async function startTarget (kind: Target['kind'], options: { selfPreservation: boolean, cluster?: boolean }): Promise<Target> {
  const settings = { ...SUITE, selfPreservation: options.selfPreservation }
  if (kind === 'stand-in') {
    const s = await startEureka(settings)
    return { kind, url: s.url, serviceUrl: s.serviceUrl, close: () => s.close() }
  }
  const real: RealEurekaOptions = { ...settings, peerEurekaNodesUpdateIntervalMs: 1_000 }
  if (options.cluster) {
    const [a, b] = await startRealEurekaCluster(real)
    return { kind, url: a.eurekaUrl, serviceUrl: a.serviceUrl, peerUrl: b.eurekaUrl, close: async () => { await Promise.all([a.stop(), b.stop()]) } }
  }
  const s = await startRealEureka(real)
  return { kind, url: s.eurekaUrl, serviceUrl: s.serviceUrl, close: () => s.stop() }
}

export const DC = { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' }

/** A registration body as eureka-js-client sends it (object port, @class, leaseInfo when given). */
export function registration (app: string, id: string, over: Record<string, unknown> = {}): { instance: Record<string, unknown> } {
  return {
    instance: {
      instanceId: id,
      hostName: '127.0.0.1',
      app,
      ipAddr: '127.0.0.1',
      status: 'UP',
      port: { $: 8080, '@enabled': 'true' },
      vipAddress: app.toLowerCase(),
      dataCenterInfo: DC,
      ...over
    }
  }
}

export interface Reply { status: number, json: any, text: string }

export async function http (method: string, url: string, body?: unknown): Promise<Reply> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  let json: unknown
  try { json = text === '' ? undefined : JSON.parse(text) } catch { json = undefined }
  return { status: res.status, json, text }
}

/** The instance as the full fetch (read-only cache) shows it, or undefined. */
export async function inFullFetch (url: string, app: string, id: string): Promise<any> {
  const r = await http('GET', `${url}/apps/`)
  const apps = (r.json?.applications?.application ?? []) as any[]
  return apps.filter((a) => a.name === app.toUpperCase()).flatMap((a) => a.instance).find((i: any) => i.instanceId === id)
}

/** The instance straight from the registry (GET /apps/{APP}/{id} bypasses the response cache). */
export async function inRegistry (url: string, app: string, id: string): Promise<any> {
  const r = await http('GET', `${url}/apps/${app}/${id}`)
  return r.status === 200 ? r.json?.instance : undefined
}

/** Polls until `fn` returns something truthy, and returns it. */
export async function until<T> (fn: () => Promise<T | false | undefined> | T | false | undefined, what: string, timeoutMs = 20_000, everyMs = 20): Promise<T> {
  return await pollUntil(fn, what, { timeoutMs, intervalMs: everyMs }) as T
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
