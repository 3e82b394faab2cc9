// Shared by the real-Envoy drain suites: a plain app behind Envoy (with a hold for a slow request),
// a raw stat read from Envoy's admin, a consumer that pools keep-alive connections, and the plugin's
// sidecar drain step run on its own (as the engine runs it after the window).
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { silentLogger, systemClock } from '@lameduck/core'
import { envoySidecar, type EnvoySidecarOptions } from '@lameduck/envoy'
import { Agent, request } from 'undici'
import type { RealEnvoy } from './envoy.ts'

export interface App { server: Server, url: string, hold: (ms: number) => void, close: () => Promise<void> }

export async function startApp (): Promise<App> {
  let holdMs = 0
  const server = createServer((req, res) => {
    const delay = req.url === '/slow' ? holdMs : 0
    setTimeout(() => res.end(`ok ${req.url}`), delay)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    server,
    url,
    hold: (ms) => { holdMs = ms },
    close: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeIdleConnections() })
  }
}

export const stat = async (envoy: RealEnvoy, name: string): Promise<number> => {
  const res = await envoy.admin('GET', `/stats?filter=^${name.replaceAll('.', '\\.')}$`)
  const m = /: (\d+)/.exec(res.body)
  return m === null ? -1 : Number(m[1])
}

export async function runSidecarDrain (envoy: RealEnvoy, options: EnvoySidecarOptions): Promise<{ problems: unknown[], startedAt: number, endedAt: number }> {
  const sidecar = envoySidecar({ envoyAdmin: envoy.adminUrl, checkIntervalMs: 200, drainBackoff: { initialMs: 50, factor: 2, jitter: 0 }, ...options })
  const problems: unknown[] = []
  const startedAt = Date.now()
  try {
    await sidecar.afterWindow[0]!.run({ signal: new AbortController().signal, clock: systemClock, logger: silentLogger, problem: (err) => problems.push(err) })
  } finally {
    await sidecar.close()
  }
  return { problems, startedAt, endedAt: Date.now() }
}

/** A consumer that pools keep-alive connections, sends for a while, then moves away (the window passed) and keeps its pool. */
export async function consumer (envoy: RealEnvoy): Promise<{ agent: Agent, ok: number, failed: string[], send: (path: string) => Promise<void> }> {
  const agent = new Agent({ keepAliveTimeout: 600_000, keepAliveMaxTimeout: 600_000, connections: 2 })
  const c = {
    agent,
    ok: 0,
    failed: [] as string[],
    send: async (path: string): Promise<void> => {
      try {
        const res = await request(envoy.inboundUrl + path, { dispatcher: agent })
        await res.body.text()
        if (res.statusCode === 200) c.ok++
        else c.failed.push(`${path}: ${res.statusCode}`)
      } catch (err) {
        c.failed.push(`${path}: ${(err as Error).message}`)
      }
    }
  }
  await Promise.all(Array.from({ length: 40 }, (_, i) => c.send(`/load/${i}`)))
  return c
}
