// The four transports a server can speak, for tests: a server of each kind around
// one request handler, and a client of each kind that keeps its connection alive.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer as createHttp, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createHttps } from 'node:https'
import { connect, createServer as createH2c, createSecureServer, type ClientHttp2Session, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2'
import type { Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from 'undici'

export const TRANSPORTS = ['http', 'https', 'h2c', 'h2'] as const
export type Transport = typeof TRANSPORTS[number]

export type Handler = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void

let material: { key: string, cert: string } | null = null

/**
 * A self-signed certificate for 127.0.0.1, made with openssl when the tests
 * run (a test-only key that never leaves the temporary directory).
 */
export function tlsMaterial (): { key: string, cert: string } {
  if (material !== null) return material
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-tls-'))
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' })
    material = { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') }
    return material
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A server of the transport's kind; not listening yet. */
export function createTransportServer (transport: Transport, handler: Handler): Server {
  switch (transport) {
    case 'http': return createHttp(handler as never)
    case 'https': return createHttps(tlsMaterial(), handler as never)
    case 'h2c': return createH2c(handler as never)
    case 'h2': return createSecureServer(tlsMaterial(), handler as never)
  }
}

export function urlOf (transport: Transport, server: Server): string {
  const { port } = server.address() as { port: number }
  return `${transport === 'https' || transport === 'h2' ? 'https' : 'http'}://127.0.0.1:${port}`
}

export interface Response { statusCode: number, headers: Record<string, string | string[] | undefined>, body: string }

export interface RequestInit { method?: string, headers?: Record<string, string> }

export interface TransportClient {
  request(path: string, init?: RequestInit): Promise<Response>
  /** Connections (HTTP/1) or sessions (HTTP/2) the client has opened so far. */
  readonly connects: number
  /** Connections or sessions the server closed under it (a GOAWAY counts). */
  readonly disconnects: number
  close(): Promise<void>
}

/** A keep-alive client: undici for http, https and h2 (allowH2), node:http2 for h2c (undici speaks h2 only over TLS). */
export function transportClient (transport: Transport, url: string): TransportClient {
  return transport === 'h2c' ? new H2cClient(url) : new UndiciClient(transport, url)
}

class UndiciClient implements TransportClient {
  readonly #client: Client
  connects = 0
  disconnects = 0
  constructor (transport: Transport, url: string) {
    const tls = transport === 'https' || transport === 'h2'
    this.#client = new Client(url, {
      keepAliveTimeout: 60_000,
      allowH2: transport === 'h2',
      ...(tls ? { connect: { ca: tlsMaterial().cert } } : {})
    })
    this.#client.on('connect', () => { this.connects++ })
    this.#client.on('disconnect', () => { this.disconnects++ })
  }

  async request (path: string, init: RequestInit = {}): Promise<Response> {
    const res = await this.#client.request({ path, method: (init.method ?? 'GET') as 'GET', headers: init.headers })
    return { statusCode: res.statusCode, headers: res.headers, body: await res.body.text() }
  }

  close (): Promise<void> { return this.#client.close() }
}

/** node:http2 over cleartext, opening a fresh session when the last one was told to go away. */
class H2cClient implements TransportClient {
  readonly #url: string
  #session: ClientHttp2Session | null = null
  connects = 0
  disconnects = 0
  constructor (url: string) { this.#url = url }

  #current (): ClientHttp2Session {
    if (this.#session !== null && !this.#session.closed && !this.#session.destroyed) return this.#session
    const session = connect(this.#url)
    session.on('error', () => {})
    session.on('goaway', () => { this.disconnects++; if (this.#session === session) this.#session = null })
    session.on('close', () => { if (this.#session === session) { this.disconnects++; this.#session = null } })
    this.connects++
    this.#session = session
    return session
  }

  request (path: string, init: RequestInit = {}): Promise<Response> {
    return new Promise((resolve, reject) => {
      const stream = this.#current().request({ ...init.headers, ':path': path, ':method': init.method ?? 'GET' })
      let statusCode = 0
      let headers: Record<string, string | string[] | undefined> = {}
      let body = ''
      stream.setEncoding('utf8')
      stream.on('response', (h) => { statusCode = Number(h[':status']); headers = h })
      stream.on('data', (chunk: string) => { body += chunk })
      stream.on('end', () => resolve({ statusCode, headers, body }))
      stream.on('error', reject)
      stream.end()
    })
  }

  async close (): Promise<void> {
    const s = this.#session
    if (s === null || s.closed) return
    await new Promise<void>((resolve) => s.close(() => resolve()))
  }
}
