// Shared by the @lameduck/nacos tests.
import { NacosNamingClient } from 'nacos'
import { warmupMetadata, type Instance, type Logger } from '@lameduck/core'

export async function waitFor<T> (what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 5_000, everyMs = 10): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await fn()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
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
