// Helpers for the envoy-*.test.ts files: a tiny app to proxy to, raw admin requests,
// and waiting for a condition with a deadline instead of sleeping.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Client } from 'undici'
import { until } from '@lameduck/test-utils'
import { startEnvoy, type EnvoyOptions, type LocalEnvoy } from '../src/envoy/index.ts'

export { fixture, fixtureJson, constructedSections } from '../../envoy/test/fixtures.ts'

export interface TestApp {
  url: string
  /** Requests held by GET /hold until release() is called. */
  held: number
  release(): void
  close(): Promise<void>
}

/**
 * GET /any -> 200 `app <method> <url>` with the request headers echoed as JSON in
 * `x-seen-headers`; POST echoes its body; /hold answers only on release();
 * /status/<code> answers that status.
 */
export async function startApp (): Promise<TestApp> {
  const waiting: ServerResponse[] = []
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (req.url === '/hold') { waiting.push(res); return }
      const code = /^\/status\/(\d{3})$/.exec(req.url ?? '')
      res.setHeader('x-seen-headers', JSON.stringify(req.headers))
      res.setHeader('server', 'app')
      res.setHeader('x-app', 'yes')
      res.statusCode = code === null ? 200 : Number(code[1])
      res.end(req.method === 'POST' ? Buffer.concat(chunks) : `app ${req.method} ${req.url}`)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    get held () { return waiting.length },
    release () { for (const res of waiting.splice(0)) res.end('released') },
    close: () => new Promise<void>((resolve) => {
      for (const res of waiting.splice(0)) res.destroy()
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}

export interface Ctx { after(fn: () => unknown): void }

/** An app plus a local Envoy in front of it, both closed after the test. */
export async function envoyFor (t: Ctx, options: Partial<EnvoyOptions> = {}): Promise<{ app: TestApp, envoy: LocalEnvoy }> {
  const app = await startApp()
  const envoy = await startEnvoy({ upstream: app.url, ...options })
  t.after(async () => { await envoy.close(); await app.close() })
  return { app, envoy }
}

export interface Raw { status: number, headers: Record<string, string | string[] | undefined>, body: string }

/**
 * One request on a connection of its own, closed after, so it never rides a pooled
 * socket. The request asks for keep-alive, so `connection: close` in the answer is the
 * server's own decision.
 */
export async function raw (url: string, method = 'GET', body?: string): Promise<Raw> {
  const { origin, pathname, search } = new URL(url)
  const client = new Client(origin)
  try {
    const res = await client.request({ method: method as 'GET', path: pathname + search, body })
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
  } finally {
    await client.destroy()
  }
}

/** Open `n` keep-alive connections (one undici Client each) and keep them open. */
export async function openConnections (url: string, n: number): Promise<{ clients: Client[], close(): Promise<void> }> {
  const clients = Array.from({ length: n }, () => new Client(url, { keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 }))
  await Promise.all(clients.map(async (c, i) => {
    const res = await c.request({ method: 'GET', path: `/conn/${i}` })
    await res.body.text()
  }))
  return { clients, close: async () => { await Promise.all(clients.map((c) => c.close())) } }
}

/** Polls until `check` returns true; fails with `what` at the deadline. */
export async function waitFor (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  await until(check, what, { timeoutMs, intervalMs: 5 })
}
