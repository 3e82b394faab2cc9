// Real grpc-js servers and clients on 127.0.0.1 for the @lameduck/grpc tests: the Echo
// service (one method of each call kind), plaintext or TLS, with attachGrpc() or without.
import { execFileSync, fork } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import * as grpc from '@grpc/grpc-js'
import * as loader from '@grpc/proto-loader'
import { memoryRegistry, type Logger, type MemoryRegistry } from '@lameduck/core'
import { attachGrpc, type GrpcAttachOptions, type LameduckHandle } from '@lameduck/grpc'

export { until } from '@lameduck/test-utils'

const fixtures = join(import.meta.dirname, 'fixtures')
const loadOptions = { keepCase: false, longs: Number, enums: Number, defaults: true }

type ClientCtor = grpc.ServiceClientConstructor
function load (file: string, path: string[]): ClientCtor {
  let node: unknown = grpc.loadPackageDefinition(loader.loadSync(join(fixtures, file), loadOptions))
  for (const p of path) node = (node as Record<string, unknown>)[p]
  return node as ClientCtor
}

export const Echo = load('echo.proto', ['lameduck', 'test', 'Echo'])
/** A health client on the test's own protobuf codec (proto-loader), not lameduck's. */
export const Health = load('health.proto', ['grpc', 'health', 'v1', 'Health'])

export interface Msg { text?: string, ms?: number, count?: number, servedBy?: string }

let material: { key: Buffer, cert: Buffer } | null = null

/** A self-signed certificate for 127.0.0.1, made with openssl when the tests run (never leaves the temp dir). */
export function tlsMaterial (): { key: Buffer, cert: Buffer } {
  if (material !== null) return material
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-grpc-tls-'))
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' })
    material = { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }
    return material
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export type Security = 'plaintext' | 'tls'
export const SECURITIES: Security[] = ['plaintext', 'tls']

export function serverCredentials (security: Security): grpc.ServerCredentials {
  if (security === 'plaintext') return grpc.ServerCredentials.createInsecure()
  const { key, cert } = tlsMaterial()
  return grpc.ServerCredentials.createSsl(null, [{ private_key: key, cert_chain: cert }], false)
}

export function clientCredentials (security: Security): grpc.ChannelCredentials {
  return security === 'plaintext' ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(tlsMaterial().cert)
}

/** Calls each Echo server's handlers saw start, unary calls not answered yet, and its response streams still open (server streaming, bidi). */
export interface Seen { started: number, unaryOpen: number, streams: Set<{ end(): void }> }

/** The Echo service; `name` answers in `servedBy`, so a test sees which server a call reached. */
export function echoImplementation (name: string, seen: Seen = { started: 0, unaryOpen: 0, streams: new Set() }): grpc.UntypedServiceImplementation {
  const impl = echoHandlers(name, seen)
  const counted: grpc.UntypedServiceImplementation = {}
  for (const [method, handler] of Object.entries(impl)) {
    counted[method] = ((call: never, callback?: (...a: unknown[]) => void) => {
      seen.started++
      if (method !== 'Unary') return (handler as (...a: unknown[]) => unknown)(call, callback)
      seen.unaryOpen++
      try {
        return (handler as (...a: unknown[]) => unknown)(call, (...a: unknown[]) => { seen.unaryOpen--; callback!(...a) })
      } catch (err) { seen.unaryOpen--; throw err }
    }) as grpc.UntypedHandleCall
  }
  return counted
}

/** Keeps `call` in `streams` until it ends, so a test's 'goingAway' listener can end it. */
function tracked (streams: Seen['streams'], call: grpc.ServerWritableStream<Msg, Msg> | grpc.ServerDuplexStream<Msg, Msg>): void {
  streams.add(call)
  const forget = (): void => { streams.delete(call) }
  call.on('finish', forget)
  call.on('cancelled', forget)
  call.on('error', forget)
}

function echoHandlers (name: string, seen: Seen): grpc.UntypedServiceImplementation {
  return {
    Unary (call: grpc.ServerUnaryCall<Msg, Msg>, callback: grpc.sendUnaryData<Msg>) {
      if (call.request.text === 'throw') throw new Error('the handler threw')
      setTimeout(() => { callback(null, { text: call.request.text ?? '', servedBy: name }) }, call.request.ms ?? 0)
    },
    ServerStream (call: grpc.ServerWritableStream<Msg, Msg>) {
      const { count = 0, ms = 10 } = call.request
      tracked(seen.streams, call)
      let sent = 0
      const tick = (): void => {
        if (call.cancelled || call.writableEnded) return
        if (count > 0 && sent >= count) { call.end(); return }
        call.write({ text: String(sent++), servedBy: name })
        setTimeout(tick, ms)
      }
      tick()
    },
    ClientStream (call: grpc.ServerReadableStream<Msg, Msg>, callback: grpc.sendUnaryData<Msg>) {
      const texts: string[] = []
      call.on('data', (m: Msg) => { texts.push(m.text ?? '') })
      call.on('end', () => { callback(null, { text: texts.join(','), servedBy: name }) })
    },
    Bidi (call: grpc.ServerDuplexStream<Msg, Msg>) {
      tracked(seen.streams, call)
      call.on('data', (m: Msg) => { if (!call.writableEnded) call.write({ text: m.text ?? '', servedBy: name }) })
      call.on('end', () => { if (!call.writableEnded) call.end() })
    }
  }
}

/** A logger that keeps every line (level, message), for assertions on what lameduck said. */
export interface Captured extends Logger { lines: Array<{ level: string, msg: string, obj: unknown }> }
export function captureLogger (): Captured {
  const lines: Captured['lines'] = []
  const at = (level: string) => (obj: unknown, msg?: string) => { lines.push({ level, msg: msg ?? (typeof obj === 'string' ? obj : ''), obj }) }
  const logger = { lines, trace: at('trace'), debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), fatal: at('fatal'), child: () => logger }
  return logger as unknown as Captured
}

export interface Started {
  server: grpc.Server
  port: number
  target: string
  security: Security
  lameduck: LameduckHandle | null
  registry: MemoryRegistry
  log: Captured
  /** Calls the Echo handlers saw. */
  seen: Seen
  /** A new Echo client to this server. */
  client(options?: grpc.ChannelOptions): grpc.Client & Record<string, any>
  stop(): Promise<void>
}

export interface StartOptions {
  security?: Security
  /** attachGrpc() options over the defaults; false: no lameduck (the negative controls). */
  lameduck?: Partial<GrpcAttachOptions> | false
  name?: string
  serverOptions?: grpc.ServerOptions
}

export function bind (server: grpc.Server, address: string, credentials: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => { server.bindAsync(address, credentials, (err, port) => { if (err) reject(err); else resolve(port) }) })
}

/** An Echo server on 127.0.0.1 port 0: memory registry, a 300 ms window, admin on a free port, no signals. */
export async function startGrpc (o: StartOptions = {}): Promise<Started> {
  const security = o.security ?? 'plaintext'
  const server = new grpc.Server(o.serverOptions)
  const seen: Seen = { started: 0, unaryOpen: 0, streams: new Set() }
  server.addService(Echo.service, echoImplementation(o.name ?? 'a', seen))
  const registry = memoryRegistry()
  const log = captureLogger()
  const lameduck = o.lameduck === false
    ? null
    : await attachGrpc(server, {
      service: 'echo',
      host: '127.0.0.1',
      registry,
      windows: { endpointLagMs: 300 },
      warmupMs: 0,
      signals: false,
      admin: { port: 0 },
      terminationMessage: false,
      logger: log,
      ...o.lameduck
    })
  const port = await bind(server, '127.0.0.1:0', serverCredentials(security))
  const target = `127.0.0.1:${port}`
  const clients: grpc.Client[] = []
  return {
    server,
    port,
    target,
    security,
    lameduck,
    registry,
    log,
    seen,
    client (options = {}) {
      const c = new Echo(target, clientCredentials(security), options)
      clients.push(c)
      return c as grpc.Client & Record<string, any>
    },
    async stop () {
      for (const c of clients) c.close()
      await lameduck?.close()
      server.forceShutdown()
    }
  }
}

/** A unary call as a promise, with the response metadata (headers) and trailers it got. */
export function unary (client: Record<string, any>, req: Msg, metadata = new grpc.Metadata(), options: grpc.CallOptions = {}): Promise<{ res: Msg, headers: grpc.Metadata | null, trailers: grpc.Metadata | null }> {
  return new Promise((resolve, reject) => {
    let headers: grpc.Metadata | null = null
    let trailers: grpc.Metadata | null = null
    let res: Msg | undefined
    let error: Error | null = null
    let finished = 0
    const done = (): void => {
      if (++finished < 2) return
      // Where the call went and how far it got: what a test names when a call fails.
      if (error !== null) reject(Object.assign(error, { peer: call.getPeer(), headers: headers !== null })); else resolve({ res: res!, headers, trailers })
    }
    const call = client.Unary(req, metadata, options, (err: Error | null, r: Msg) => { error = err; res = r; done() })
    call.on('metadata', (m: grpc.Metadata) => { headers = m })
    call.on('status', (s: grpc.StatusObject) => { trailers = s.metadata; done() })
  })
}

/** Every response of a server-streaming call, then its status. */
export function serverStream (client: Record<string, any>, req: Msg): Promise<{ messages: Msg[], status: grpc.StatusObject, headers: grpc.Metadata | null }> {
  return new Promise((resolve) => {
    const messages: Msg[] = []
    let headers: grpc.Metadata | null = null
    const call = client.ServerStream(req)
    call.on('metadata', (m: grpc.Metadata) => { headers = m })
    call.on('data', (m: Msg) => { messages.push(m) })
    call.on('error', () => {})
    call.on('status', (status: grpc.StatusObject) => { resolve({ messages, status, headers }) })
  })
}

/** The state header a response carried, in its headers or trailers. */
export function stateOf (r: { headers: grpc.Metadata | null, trailers?: grpc.Metadata | null }): string | undefined {
  const v = r.headers?.get('x-lameduck-state')[0] ?? r.trailers?.get('x-lameduck-state')[0]
  return v === undefined ? undefined : String(v)
}

export function healthClient (s: Started): grpc.Client & Record<string, any> {
  return new Health(s.target, clientCredentials(s.security)) as grpc.Client & Record<string, any>
}

export function check (client: Record<string, any>, service = ''): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    client.Check({ service }, (err: Error | null, res: { status: number }) => { if (err) reject(err); else resolve(res) })
  })
}

export const SERVING = 1
export const NOT_SERVING = 2

export type Kind = 'unary' | 'server streaming' | 'client streaming' | 'bidi'
export const KINDS: Kind[] = ['unary', 'server streaming', 'client streaming', 'bidi']

export interface CallResult { code: number, details: string, messages: Msg[], headers: grpc.Metadata | null, trailers: grpc.Metadata | null }

/**
 * One call of `kind` that lasts about `ms`: the unary handler waits, the server
 * streams 5 messages, the client streams 5 (then the server answers), bidi
 * exchanges 5. Resolves with its status whatever it is (a lost call is a code).
 */
export function runCall (client: Record<string, any>, kind: Kind, { ms = 400, metadata = new grpc.Metadata(), onData }: { ms?: number, metadata?: grpc.Metadata, onData?: () => void } = {}): Promise<CallResult> {
  return new Promise((resolve) => {
    const messages: Msg[] = []
    let headers: grpc.Metadata | null = null
    const step = Math.max(1, Math.round(ms / 5))
    const onReply = (err: Error | null, m?: Msg): void => { if (err === null && m !== undefined) messages.push(m) }
    const call = kind === 'unary'
      ? client.Unary({ text: 'u', ms }, metadata, onReply)
      : kind === 'server streaming'
        ? client.ServerStream({ count: 5, ms: step }, metadata)
        : kind === 'client streaming' ? client.ClientStream(metadata, onReply) : client.Bidi(metadata)
    call.on('metadata', (m: grpc.Metadata) => { headers = m })
    if (kind === 'server streaming' || kind === 'bidi') call.on('data', (m: Msg) => { messages.push(m); onData?.() })
    call.on('error', () => {})
    call.on('status', (s: grpc.StatusObject) => {
      // A unary or client-streaming reply arrives in its callback, after 'status': let it land.
      setImmediate(() => { resolve({ code: s.code, details: s.details, messages, headers, trailers: s.metadata }) })
    })
    if (kind === 'client streaming' || kind === 'bidi') {
      let sent = 0
      const send = (): void => {
        if (sent === 5) { call.end(); return }
        call.write({ text: String(sent++) })
        setTimeout(send, step)
      }
      send()
    }
  })
}

/** How many messages a complete call of `kind` gets back. */
export function expectedMessages (kind: Kind): number {
  return kind === 'server streaming' || kind === 'bidi' ? 5 : 1
}

/** The child provider (fixtures/signal-app.ts: attachGrpc on its own signal path, or naive); its stdout lines are JSON events. */
export function spawnSignalApp (args: string[]): { lines: Array<Record<string, unknown>>, exited: Promise<number | null>, kill: () => void } {
  const child = fork(new URL('./fixtures/signal-app.ts', import.meta.url), args, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
  const lines: Array<Record<string, unknown>> = []
  createInterface({ input: child.stdout! }).on('line', (l) => { try { lines.push(JSON.parse(l)) } catch {} })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return { lines, exited, kill: () => { child.kill('SIGTERM') } }
}
