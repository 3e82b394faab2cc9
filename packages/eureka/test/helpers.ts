import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import type { Instance, Logger } from '@lameduck/core'
import { proxyWithDelay } from '@lameduck/test-utils'

export function instance (id: string, port: number, metadata: Record<string, string> = {}, service = 'orders'): Instance {
  return { id, service, host: '127.0.0.1', port, status: 'UP', metadata }
}

export { until } from '@lameduck/test-utils'

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** A logger that keeps every line, for asserting what the adapter reports. */
export function memoryLogger (): Logger & { lines: Array<{ level: string, msg: string, obj: any }> } {
  const lines: Array<{ level: string, msg: string, obj: any }> = []
  const at = (level: string) => (obj: object, msg?: string): void => { lines.push({ level, msg: msg ?? '', obj }) }
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

export interface DelayProxy {
  url: string
  /** Paths of requests being held back right now (not yet forwarded). */
  held: string[]
  close(): Promise<void>
}

/**
 * An HTTP proxy in front of the local Eureka server that holds matching requests
 * back before forwarding them: a slow network, or a request still in flight
 * while something else happens.
 */
export async function delayProxy (target: string, delayFor: (method: string, path: string) => number): Promise<DelayProxy> {
  const upstream = new URL(target)
  const proxy = await proxyWithDelay(upstream.host, delayFor)
  return { url: `http://${proxy.hostPort}${upstream.pathname.replace(/\/$/, '')}`, held: proxy.held, close: proxy.close }
}

// --- the unmodified eureka-js-client, for comparisons ---

const require = createRequire(import.meta.url)
export const { Eureka } = require('eureka-js-client') as { Eureka: new (config: object) => any }
export const HERE = fileURLToPath(new URL('.', import.meta.url))
export const quiet = { debug () {}, info () {}, warn () {}, error () {} }
export const DC = { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' }

export const cb = (fn: (done: (err?: Error | null) => void) => void): Promise<void> =>
  new Promise((resolve, reject) => fn((err) => err ? reject(err) : resolve()))
