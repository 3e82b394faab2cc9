// The two Nacos servers the conformance and propagation suites run against:
// the devkit stand-in and the real server (Nacos 0.8.0, see nacos-server.ts),
// behind one small face: the serverList the SDK takes and raw v1 calls.
import { NacosNamingClient } from 'nacos'
import { startNacos } from '@lameduck/devkit'
import { startRealNacos } from './nacos-server.ts'

export type TargetName = 'stand-in' | 'real'

export interface NacosTarget {
  name: TargetName
  serverList: string
  /** A v1 naming call (/nacos/v1/ns + path), params in the query string as the Node SDK sends them. */
  call: (method: string, path: string, params?: Record<string, string | number | boolean>) => Promise<{ status: number, text: string }>
  close: () => Promise<void>
}

export interface TargetSettings {
  /** The poll period the server hands clients (stand-in option; real: the defaultCacheMillis switch, min 1000). */
  cacheMillis?: number
  /** false: the server pushes nothing (stand-in option; real: the pushVersion switch above every client's version). */
  push?: boolean
}

async function v1 (serverList: string, method: string, path: string, params: Record<string, string | number | boolean> = {}): Promise<{ status: number, text: string }> {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]))
  const res = await fetch(`http://${serverList}/nacos/v1/ns${path}?${query}`, { method, headers: { 'user-agent': 'Nacos-Java-Client:v1.0.0' } })
  return { status: res.status, text: await res.text() }
}

export async function startTarget (name: TargetName, settings: TargetSettings = {}): Promise<NacosTarget> {
  if (name === 'stand-in') {
    const server = await startNacos({ port: 0, ...settings })
    return { name, serverList: server.serverList, call: (m, p, q) => v1(server.serverList, m, p, q), close: () => server.close() }
  }
  const server = await startRealNacos()
  // 0.8.0 in standalone mode starts with client-beat checks off (healthCheckEnabled false): silent
  // instances would never expire. Every cluster runs with them on; so do these tests.
  await server.updateSwitch('check', { enabled: 'true' })
  if (settings.cacheMillis !== undefined) await server.updateSwitch('defaultCacheMillis', { millis: settings.cacheMillis })
  // 0.8.0 adds a push target only for clients whose version reaches pushJavaVersion (the SDK says v1.0.0).
  if (settings.push === false) await server.updateSwitch('pushVersion', { type: 'java', version: '99.0.0' })
  return { name, serverList: server.serverList, call: (m, p, q) => v1(server.serverList, m, p, q), close: () => server.close() }
}

const quiet = { debug () {}, info () {}, warn () {}, error () {}, log () {} }

/** The unmodified nacos naming client from npm, ready. */
export async function sdkClient (target: NacosTarget): Promise<any> {
  const client: any = new NacosNamingClient({ logger: quiet as unknown as typeof console, serverList: target.serverList })
  await client.ready()
  return client
}

/** Hosts of a raw /instance/list answer (empty when the service is unknown: the real 0.8.0 answers 404 then). */
export async function listHosts (target: NacosTarget, serviceName: string): Promise<any[]> {
  const answer = await target.call('GET', '/instance/list', { serviceName })
  if (answer.status === 404) return []
  if (answer.status !== 200) throw new Error(`list ${serviceName}: ${answer.status} ${answer.text}`)
  return (JSON.parse(answer.text) as { hosts: any[] }).hosts
}

/** Healthy as a client reads it: 2.x hosts say `healthy`, 0.8.0 hosts say `valid` (the SDK maps one to the other). */
export function isHealthy (host: { healthy?: boolean, valid?: boolean }): boolean {
  return host.healthy ?? host.valid ?? true
}
