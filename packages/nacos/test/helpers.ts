// Shared by the @lameduck/nacos tests.
import { NacosNamingClient } from 'nacos'
import { warmupMetadata, type Instance, type Logger } from '@lameduck/core'
import { proxyWithDelay, until } from '@lameduck/test-utils'

/** until() with the subject first; any value but undefined and false counts (0 and '' too). */
export async function waitFor<T> (what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 5_000, everyMs = 10): Promise<T> {
  const found = await until(async () => {
    const value = await fn()
    return value !== undefined && value !== false ? { value } : undefined
  }, what, { timeoutMs, intervalMs: everyMs })
  return found.value
}

export function instance (port: number, options: { service?: string, weight?: number, status?: Instance['status'], metadata?: Record<string, string> } = {}): Instance {
  const service = options.service ?? 'orders'
  return {
    id: `127.0.0.1:${service}:${port}`,
    service,
    host: '127.0.0.1',
    port,
    status: options.status ?? 'UP',
    metadata: { ...warmupMetadata({ registeredAt: 1_700_000_000_000, warmupMs: 60_000, weight: options.weight ?? 100 }), ...options.metadata }
  }
}

export interface LogEntry { level: string, obj: Record<string, unknown>, msg: string }

export function captureLogger (): Logger & { entries: LogEntry[] } {
  const entries: LogEntry[] = []
  const at = (level: string) => (obj: object, msg?: string): void => { entries.push({ level, obj: obj as Record<string, unknown>, msg: msg ?? '' }) }
  return { entries, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

const quiet = { debug () {}, info () {}, warn () {}, error () {} }

/** The unmodified nacos naming client, for comparisons with the adapter. */
export async function sdkClient (serverList: string): Promise<any> {
  const client: any = new NacosNamingClient({ logger: quiet as unknown as typeof console, serverList })
  await client.ready()
  return client
}

export interface DelayProxy {
  /** What the SDK takes as `serverList`: the proxy's host:port. */
  serverList: string
  /** `METHOD path` of requests held back right now (not yet forwarded). */
  held: string[]
  close(): Promise<void>
}

/**
 * An HTTP proxy in front of the local Nacos server that holds matching requests
 * back before forwarding them: a slow network, or a call still in flight while
 * something else happens. (UDP pushes go from the server to the client directly.)
 */
export async function delayProxy (serverList: string, delayFor: (method: string, path: string) => number): Promise<DelayProxy> {
  const proxy = await proxyWithDelay(serverList, delayFor)
  return { serverList: proxy.hostPort, held: proxy.held, close: proxy.close }
}
