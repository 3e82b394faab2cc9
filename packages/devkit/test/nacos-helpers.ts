// Shared by the nacos-*.test.ts files: waiting on conditions, raw v1 HTTP calls,
// the unmodified nacos SDK client, fixtures.
import { readFileSync } from 'node:fs'
import dgram from 'node:dgram'
import { once } from 'node:events'
import { gunzipSync } from 'node:zlib'
import { NacosNamingClient } from 'nacos'
import { until } from '@lameduck/test-utils'
import type { NacosServer } from '../src/nacos/index.ts'

export const JAVA_AGENT = 'Nacos-Java-Client:v1.0.0'

/** until() with the subject first; any value but undefined and false counts (0 and '' too). */
export async function waitFor<T> (what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 5_000, everyMs = 10): Promise<T> {
  const found = await until(async () => {
    const value = await fn()
    return value !== undefined && value !== false ? { value } : undefined
  }, what, { timeoutMs, intervalMs: everyMs })
  return found.value
}

export interface HttpAnswer { status: number, text: string, json: any }

/** A v1 call with params in the query string (as the Node SDK sends them), or as a form body. */
export async function nacosHttp (server: NacosServer, method: string, path: string, params: Record<string, string | number | boolean> = {}, opts: { form?: boolean, headers?: Record<string, string> } = {}): Promise<HttpAnswer> {
  const search = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]))
  const url = `http://${server.serverList}/nacos/v1/ns${path}${opts.form === true ? '' : `?${search}`}`
  const res = await fetch(url, {
    method,
    headers: { 'user-agent': JAVA_AGENT, ...(opts.form === true ? { 'content-type': 'application/x-www-form-urlencoded' } : {}), ...opts.headers },
    body: opts.form === true ? search.toString() : undefined
  })
  const text = await res.text()
  let json: unknown
  try { json = JSON.parse(text) } catch { json = undefined }
  return { status: res.status, text, json }
}

export async function register (server: NacosServer, service: string, port: number, extra: Record<string, string | number | boolean> = {}): Promise<void> {
  const answer = await nacosHttp(server, 'POST', '/instance', { serviceName: service, ip: '127.0.0.1', port, ...extra })
  if (answer.text !== 'ok') throw new Error(`register failed: ${answer.status} ${answer.text}`)
}

export async function deregister (server: NacosServer, service: string, port: number, extra: Record<string, string | number | boolean> = {}): Promise<void> {
  const answer = await nacosHttp(server, 'DELETE', '/instance', { serviceName: service, ip: '127.0.0.1', port, ...extra })
  if (answer.text !== 'ok') throw new Error(`deregister failed: ${answer.status} ${answer.text}`)
}

const quiet = { debug () {}, info () {}, warn () {}, error () {} }

/** The unmodified nacos naming client from npm. */
export async function sdkClient (server: NacosServer): Promise<any> {
  const client: any = new NacosNamingClient({ logger: quiet as unknown as typeof console, serverList: server.serverList })
  await client.ready()
  return client
}

export function fixture (name: string): any {
  return JSON.parse(readFileSync(new URL(`./fixtures/nacos/${name}`, import.meta.url), 'utf8'))
}

/** A bare UDP socket standing in for a subscriber: collects push packets, acks only when told to. */
export async function udpSubscriber (ack: boolean): Promise<{ port: number, packets: Array<{ packet: any, gzip: boolean, at: number }>, close: () => Promise<void> }> {
  const socket = dgram.createSocket('udp4')
  const packets: Array<{ packet: any, gzip: boolean, at: number }> = []
  socket.on('message', (msg, rinfo) => {
    const gzip = msg[0] === 0x1f && msg[1] === 0x8b
    const packet = JSON.parse((gzip ? gunzipSync(msg) : msg).toString('utf8'))
    packets.push({ packet, gzip, at: Date.now() })
    if (ack) socket.send(JSON.stringify({ type: 'push-ack', lastRefTime: packet.lastRefTime, data: '' }), rinfo.port, rinfo.address)
  })
  socket.bind(0, '127.0.0.1')
  await once(socket, 'listening')
  return { port: socket.address().port, packets, close: () => new Promise<void>((resolve) => socket.close(() => resolve())) }
}
