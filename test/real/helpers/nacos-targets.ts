// The Nacos servers the conformance and propagation suites run against: the devkit stand-in and
// the real Nacos 2.3.1 and 3.1.0 servers (nacos-modern.ts), behind one small face: the serverList
// the SDK takes, raw v1 naming calls, and the runtime switches.
import { NacosNamingClient } from 'nacos'
import { startNacos } from '@lameduck/devkit'
import { setSwitch, startModernNacos, type ModernNacos, type NacosVersion } from './nacos-modern.ts'

export type TargetName = 'stand-in' | NacosVersion
export const TARGETS: TargetName[] = ['stand-in', '2.3.1', '3.1.0']

export interface NacosTarget {
  name: TargetName
  serverList: string
  /** A v1 naming call (/nacos/v1/ns + path), params in the query string as the Node SDK sends them. */
  call: (method: string, path: string, params?: Record<string, string | number | boolean>) => Promise<{ status: number, text: string }>
  /** The real server, for its own API (undefined on the stand-in). */
  real?: ModernNacos
  close: () => Promise<void>
}

export interface TargetSettings {
  /** The poll period handed to clients (stand-in option; real: the pushCacheMillis switch, at least 10 000, which 2.x/3.x list answers carry). */
  cacheMillis?: number
  /** Change → push task (stand-in option; real: nacos.naming.push.pushTaskDelay). Default 500 on both. */
  pushDelayMs?: number
  /** Extra properties for the real servers. */
  properties?: Record<string, string | number | boolean>
}

async function v1 (serverList: string, method: string, path: string, params: Record<string, string | number | boolean> = {}): Promise<{ status: number, text: string }> {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]))
  const res = await fetch(`http://${serverList}/nacos/v1/ns${path}?${query}`, { method, headers: { 'user-agent': 'Nacos-Java-Client:v1.0.0' } })
  return { status: res.status, text: await res.text() }
}

export async function startTarget (name: TargetName, settings: TargetSettings = {}): Promise<NacosTarget> {
  if (name === 'stand-in') {
    const server = await startNacos({ port: 0, ...(settings.cacheMillis === undefined ? {} : { cacheMillis: settings.cacheMillis }), ...(settings.pushDelayMs === undefined ? {} : { pushDelayMs: settings.pushDelayMs }) })
    return { name, serverList: server.serverList, call: (m, p, q) => v1(server.serverList, m, p, q), close: () => server.close() }
  }
  const properties = { ...settings.properties, ...(settings.pushDelayMs === undefined ? {} : { 'nacos.naming.push.pushTaskDelay': settings.pushDelayMs }) }
  const server = await startModernNacos(name, { properties })
  try {
    if (settings.cacheMillis !== undefined) await setSwitch(server, 'pushCacheMillis', settings.cacheMillis, 'defaultPushCacheMillis')
  } catch (err) {
    await server.close()
    throw err
  }
  return { name, serverList: server.serverList, real: server, call: (m, p, q) => v1(server.serverList, m, p, q), close: () => server.close() }
}

const quiet = { debug () {}, info () {}, warn () {}, error () {}, log () {} }

/** The unmodified nacos naming client from npm, ready. */
export async function sdkClient (target: NacosTarget): Promise<any> {
  const client: any = new NacosNamingClient({ logger: quiet as unknown as typeof console, serverList: target.serverList })
  await client.ready()
  return client
}

/** Hosts of a raw /instance/list answer. */
export async function listHosts (target: NacosTarget, serviceName: string): Promise<any[]> {
  const answer = await target.call('GET', '/instance/list', { serviceName })
  if (answer.status !== 200) throw new Error(`list ${serviceName}: ${answer.status} ${answer.text}`)
  return (JSON.parse(answer.text) as { hosts: any[] }).hosts
}

export function isHealthy (host: { healthy?: boolean }): boolean {
  return host.healthy ?? true
}
