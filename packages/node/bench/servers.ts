// The hello-world servers the overhead bench measures, each bare and with
// attach(): Express 5 on node:http, plain node:http, node:https, and node:http2
// h2c and h2 (over TLS). Run in a child process (`overhead.ts --serve
// <server>:<mode>`), which reports its port. TLS uses a throwaway self-signed
// certificate (openssl, as in the tests); the load generators do not verify it.
import { createServer, type RequestListener } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { createSecureServer, createServer as createH2Server, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2'
import type { Server } from 'node:net'
import express from 'express'

import { tlsMaterial } from '../test/transports.ts'

export const SERVERS = ['express', 'node-http', 'https', 'h2c', 'h2'] as const
export type ServerKind = typeof SERVERS[number]
/** `-otel`: with the OpenTelemetry SDK registered globally (otel-sdk.ts), as an app that uses it. */
export type Mode = 'bare' | 'attach' | 'bare-otel' | 'attach-otel' | 'attach-otel-after-listen'

const BODY = JSON.stringify({ hello: 'world' })

const hello = (_req: unknown, res: { setHeader(n: string, v: string): unknown, end(b: string): unknown }): void => {
  res.setHeader('content-type', 'application/json')
  res.end(BODY)
}

function build (kind: ServerKind): Server {
  if (kind === 'express') {
    const app = express()
    app.get('/', (_req, res) => { res.json({ hello: 'world' }) })
    return createServer(app as RequestListener)
  }
  if (kind === 'node-http') return createServer(hello)
  if (kind === 'https') return createHttpsServer(tlsMaterial(), hello)
  const h2 = (req: Http2ServerRequest, res: Http2ServerResponse): void => { hello(req, res) }
  return kind === 'h2' ? createSecureServer(tlsMaterial(), h2) : createH2Server(h2)
}

export async function serve (kind: ServerKind, mode: Mode): Promise<void> {
  // Node 24 switches its AsyncContextFrame class to the active one lazily, at the process's first
  // node:async_hooks load or clearTimeout(). Code that ran before on the inactive class (the tick
  // queue, once warm) keeps polymorphic inline caches for good, about 5,000 instructions per request:
  // which side paid depended on whether the switch came before or after the warm-up (attach()'s
  // first clearTimeout, the first request's). An app's start-up makes the switch (a logger, a pool,
  // an SDK's context manager); here both sides make it first, so neither pays for the other's order.
  await import('node:async_hooks')
  // The engine is loaded by the attached side only, as an app that uses it imports it before it builds its
  // server: the bare side is a server without lameduck, and the count includes what loading it costs.
  const engine = mode.startsWith('attach') ? { ...await import('@lameduck/core'), ...await import('@lameduck/node') } : null
  const server = build(kind)
  if (mode.includes('-otel')) (await import('./otel-sdk.ts')).installOtelSdk()
  // For bisecting a count (callgrind-compare.ts): LAMEDUCK_BENCH_ATTACH merges options (JSON) into
  // attach()'s; LAMEDUCK_BENCH_SECOND=http|net starts another listener before the app's.
  const extra = JSON.parse(process.env.LAMEDUCK_BENCH_ATTACH ?? '{}') as object
  const second = process.env.LAMEDUCK_BENCH_SECOND
  // LAMEDUCK_BENCH_EMITTERS=n: n more EventEmitter classes instantiated at start-up, as any app's
  // modules do. A bare hello world constructs about four, the most V8 keeps an inline cache
  // polymorphic for: one more class turns EventEmitter.init's megamorphic (docs/benchmarks.md).
  const { EventEmitter } = await import('node:events')
  const emitters = Array.from({ length: Number(process.env.LAMEDUCK_BENCH_EMITTERS ?? 0) }, () => new (class extends EventEmitter {})())
  ;(globalThis as { benchEmitters?: unknown }).benchEmitters = emitters
  if (second !== undefined) {
    const other = second === 'net' ? (await import('node:net')).createServer(() => {}) : createServer(() => {})
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
  }
  const attachIt = async (): Promise<void> => {
    const { attach, memoryRegistry, silentLogger } = engine!
    await attach(server, { service: 'bench', host: '127.0.0.1', registry: memoryRegistry(), windows: 'none', admin: { port: 0 }, signals: false, logger: silentLogger, ...extra })
  }
  // As the READMEs show it, attach() before listen(); '-after-listen' the other way round.
  const afterListen = mode.endsWith('-after-listen')
  if (mode.startsWith('attach') && !afterListen) await attachIt()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  if (mode.startsWith('attach') && afterListen) await attachIt()
  // The parent asks for the CPU time spent so far before and after a measured run.
  process.on('message', (m) => { if (m === 'cpu') { const u = process.cpuUsage(); process.send!({ cpuMicros: u.user + u.system }) } })
  process.send!({ port: (server.address() as { port: number }).port })
  process.on('disconnect', () => {
    server.close(() => process.exit(0))
    ;(server as { closeAllConnections?: () => void }).closeAllConnections?.()
    setTimeout(() => process.exit(0), 1_000).unref()
  })
}
