// A Node consumer without lameduck: the unmodified eureka-js-client, round-robin over its cache,
// one call every `intervalMs`, recorded like the Java consumer's JSON lines.
import { createRequire } from 'node:module'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { CallLine } from './eureka.ts'

const require = createRequire(import.meta.url)
const { Eureka } = require('eureka-js-client') as { Eureka: new (config: object) => any }
const quiet = { debug () {}, info () {}, warn () {}, error () {} }

export interface NodeConsumer { calls: CallLine[], stop: () => Promise<void> }

export async function startNodeConsumer (o: { serviceUrl: string, registryFetchIntervalMs: number, app?: string, intervalMs?: number }): Promise<NodeConsumer> {
  const app = (o.app ?? 'orders').toUpperCase()
  const client = new Eureka({
    cwd: mkdtempSync(join(tmpdir(), 'node-consumer-')),
    logger: quiet,
    eureka: { serviceUrls: { default: [o.serviceUrl] }, registerWithEureka: false, registryFetchInterval: o.registryFetchIntervalMs, maxRetries: 0 }
  })
  await new Promise<void>((resolve, reject) => client.start((err: Error | null) => err ? reject(err) : resolve()))
  const calls: CallLine[] = []
  let next = 0
  const state = { running: true }
  const loop = (async () => {
    while (state.running) {
      const t = Date.now()
      const list = (client.cache.app[app] ?? []) as Array<{ instanceId: string, hostName: string, port: { $: number } }>
      const line: CallLine = { lab: 'call', target: app, t, ms: 0, instance: null, status: 0, error: null, known: list.map((i) => i.instanceId) }
      const pick = list.length > 0 ? list[next++ % list.length] : undefined
      if (pick === undefined) {
        line.error = 'no instances'
      } else {
        try {
          const res = await fetch(`http://${pick.hostName}:${pick.port.$}/hello`, { signal: AbortSignal.timeout(5_000) })
          await res.arrayBuffer()
          line.status = res.status
          line.instance = res.headers.get('x-instance')
        } catch (err) {
          line.error = (err as Error).message
        }
      }
      line.ms = Date.now() - t
      calls.push(line)
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, (o.intervalMs ?? 20) - line.ms)))
    }
  })()
  return {
    calls,
    stop: async () => {
      state.running = false
      await loop
      await new Promise<void>((resolve) => client.stop(() => resolve()))
    }
  }
}
