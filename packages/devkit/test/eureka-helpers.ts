// Shared by the eureka-*.test.ts files: HTTP helpers, a real eureka-js-client, polling.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { gunzipSync } from 'node:zlib'

export const DC = { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' }

export function fixture (name: string): unknown {
  return JSON.parse(readFileSync(new URL(`./fixtures/eureka/${name}`, import.meta.url), 'utf8'))
}

export interface Reply { status: number, body: string, json: any, headers: Headers }

/** One HTTP call; JSON by default, like eureka-js-client. */
export async function call (method: string, url: string, options: { body?: unknown, accept?: string | null, headers?: Record<string, string> } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers }
  if (options.accept !== null) headers.accept = options.accept ?? 'application/json'
  let body: string | undefined
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
    headers['content-type'] ??= 'application/json'
  }
  const res = await fetch(url, { method, headers, body })
  const text = await res.text()
  let json: unknown
  try { json = text === '' ? undefined : JSON.parse(text) } catch { json = undefined }
  return { status: res.status, body: text, json, headers: res.headers }
}

/** Raw gzip check: fetch() would decompress silently. */
export async function rawGet (url: string, headers: Record<string, string>): Promise<{ status: number, encoding: string | null, text: string }> {
  const { request } = await import('node:http')
  return new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const raw = Buffer.concat(chunks)
        const encoding = res.headers['content-encoding'] ?? null
        resolve({ status: res.statusCode ?? 0, encoding, text: (encoding === 'gzip' ? gunzipSync(raw) : raw).toString('utf8') })
      })
    }).on('error', reject).end()
  })
}

export function body (id: string, over: Record<string, unknown> = {}, app = 'orders'): { instance: Record<string, unknown> } {
  return {
    instance: {
      instanceId: id,
      hostName: '127.0.0.1',
      app,
      ipAddr: '127.0.0.1',
      status: 'UP',
      port: { $: 8080, '@enabled': 'true' },
      vipAddress: app,
      dataCenterInfo: DC,
      ...over
    }
  }
}

export { until } from '@lameduck/test-utils'

// --- the real, unmodified eureka-js-client ---

const require = createRequire(import.meta.url)
const { Eureka } = require('eureka-js-client') as { Eureka: new (config: object) => any }
const HERE = fileURLToPath(new URL('.', import.meta.url))
const quiet = { debug () {}, info () {}, warn () {}, error () {} }

export interface JsClientOptions {
  serviceUrl: string
  instance?: Record<string, unknown>
  eureka?: Record<string, unknown>
  shouldUseDelta?: boolean
}

/** An eureka-js-client configured the way its README shows, with its YAML lookup pointed at this folder. */
export function jsClient (o: JsClientOptions): any {
  return new Eureka({
    cwd: HERE,
    logger: quiet,
    shouldUseDelta: o.shouldUseDelta ?? false,
    instance: o.instance ?? {},
    eureka: {
      serviceUrls: { default: [o.serviceUrl] },
      registerWithEureka: o.instance !== undefined,
      heartbeatInterval: 100,
      registryFetchInterval: 100,
      maxRetries: 0,
      ...o.eureka
    }
  })
}

export function jsInstance (id: string, port: number, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { app: 'orders', instanceId: id, hostName: '127.0.0.1', ipAddr: '127.0.0.1', port: { $: port, '@enabled': true }, vipAddress: 'orders', dataCenterInfo: DC, ...over }
}

export const cb = (fn: (done: (err?: Error | null) => void) => void): Promise<void> =>
  new Promise((resolve, reject) => fn((err) => err ? reject(err) : resolve()))
