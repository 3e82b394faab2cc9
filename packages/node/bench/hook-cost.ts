// What attach() adds to each request, without the network: a server fed HTTP/1.1
// (or h2c, from an in-process node:http2 client) over an in-memory duplex pair (no syscalls, no load generator competing for the
// CPU), bare vs with attach(), each round in a fresh child process, alternating.
// The end-to-end ratio (overhead.ts) divides this cost by what the kernel and the
// app spend per request; this bench shows the cost itself, in ns per request, and
// the heap each request allocates (garbage included: what the scavenges cost), which
// unlike time does not move with the machine's load.
//   node --conditions=@lameduck/source packages/node/bench/hook-cost.ts [--rounds 7] [--requests 200000]
// One side alone, to profile it: add --cpu-prof and `--child express:attach`.
import { fork } from 'node:child_process'
import { once } from 'node:events'
import { Session } from 'node:inspector/promises'
import { createServer, type RequestListener, type Server } from 'node:http'
import { connect as h2connect, createServer as createH2Server, type Http2Server } from 'node:http2'
import { duplexPair } from 'node:stream'
import { parseArgs } from 'node:util'
import express from 'express'
import { memoryRegistry, silentLogger } from '@lameduck/core'
import { attach } from '@lameduck/node'

const KINDS = ['node-http', 'express', 'h2c'] as const
type Kind = typeof KINDS[number]
/** `-otel`: with the OpenTelemetry SDK registered globally (otel-sdk.ts); run with --child, e.g. `--child node-http:attach-otel`. */
type Mode = 'bare' | 'attach' | 'bare-otel' | 'attach-otel'
const LABEL: Record<Kind, string> = { 'node-http': 'node:http', express: 'Express 5', h2c: 'h2c (node:http2 compat API)' }
const BODY = JSON.stringify({ hello: 'world' })
const REQUEST = Buffer.from('GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n')
const CONNECTIONS = 10
/** Requests under the sampling heap profiler (about six samples each on h2c): enough for a tenth of a percent. */
const ALLOC_REQUESTS = 50_000

function build (kind: Kind): Server | Http2Server {
  if (kind === 'h2c') return createH2Server((_req, res) => { res.setHeader('content-type', 'application/json'); res.end(BODY) })
  if (kind === 'express') {
    const app = express()
    app.get('/', (_req, res) => { res.json({ hello: 'world' }) })
    return createServer(app as RequestListener)
  }
  return createServer((_req, res) => { res.setHeader('content-type', 'application/json'); res.end(BODY) })
}

/** `n` keep-alive requests over CONNECTIONS in-memory connections, one at a time on each. */
function drive (server: Server, n: number): Promise<void> {
  return new Promise((resolve) => {
    let left = n
    let open = CONNECTIONS
    for (let i = 0; i < CONNECTIONS; i++) {
      const [client, socket] = duplexPair()
      server.emit('connection', socket)
      client.on('data', (chunk: Buffer) => {
        // Each response ends with the body; count them to send the next request.
        for (let at = chunk.indexOf(BODY); at !== -1; at = chunk.indexOf(BODY, at + 1)) {
          if (left-- > 0) { client.write(REQUEST); continue }
          client.destroy(); socket.destroy()
          if (--open === 0) resolve()
          return
        }
      })
      client.write(REQUEST)
    }
  })
}

/** `n` h2c requests over one in-memory session, CONNECTIONS streams at a time (an h2 client multiplexes). */
function driveH2 (server: Http2Server, n: number): Promise<void> {
  const [client, socket] = duplexPair()
  server.emit('connection', socket)
  const session = h2connect('http://127.0.0.1', { createConnection: () => client })
  let left = n
  let running = CONNECTIONS
  return new Promise((resolve) => {
    const next = (): void => {
      if (left-- <= 0) {
        if (--running === 0) { session.destroy(); socket.destroy(); resolve() }
        return
      }
      const stream = session.request({ ':path': '/' })
      stream.on('data', () => {})
      stream.on('end', next)
      stream.end()
    }
    for (let i = 0; i < CONNECTIONS; i++) next()
  })
}

/** The child: builds the server, warms it up, reports CPU µs per request over `n` requests. */
async function child (kind: Kind, mode: Mode, n: number): Promise<void> {
  const server = build(kind)
  if (mode.endsWith('-otel')) (await import('./otel-sdk.ts')).installOtelSdk()
  if (mode.startsWith('attach')) {
    await attach(server, { service: 'bench', host: '127.0.0.1', registry: memoryRegistry(), windows: 'none', admin: { port: 0 }, signals: false, logger: silentLogger })
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)) // attach() starts on 'listening'
  const run = (count: number): Promise<void> => kind === 'h2c' ? driveH2(server as Http2Server, count) : drive(server as Server, count)
  await run(Math.min(n, 50_000))
  const before = process.cpuUsage()
  await run(n)
  const used = process.cpuUsage(before)
  const cpuPerRequest = (used.user + used.system) / n
  // After the timed run: the sampling slows the requests down, not what they allocate.
  const bytesPerRequest = await allocatedPerRequest(run, Math.min(n, ALLOC_REQUESTS))
  // Run alone (e.g. under --cpu-prof), it prints its result.
  if (process.send !== undefined) process.send({ cpuPerRequest, bytesPerRequest }); else console.log(`${kind} ${mode}: ${cpuPerRequest.toFixed(2)} µs/request, ${Math.round(bytesPerRequest)} B/request`)
  process.exit(0)
}

/**
 * Heap allocated per request over `n` requests, garbage included, from V8's sampling
 * heap profiler (its sizes are scaled to estimate every allocation, not only the sampled ones).
 */
async function allocatedPerRequest (run: (count: number) => Promise<void>, n: number): Promise<number> {
  const session = new Session()
  session.connect()
  await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  await run(n)
  const { profile } = await session.post('HeapProfiler.stopSampling')
  session.disconnect()
  let total = 0
  const walk = (node: typeof profile.head): void => { total += node.selfSize; for (const child of node.children) walk(child) }
  walk(profile.head)
  return total / n
}

interface Sample { cpuPerRequest: number, bytesPerRequest: number }

async function round (kind: Kind, mode: Mode, n: number): Promise<Sample> {
  const c = fork(new URL(import.meta.url), ['--child', `${kind}:${mode}`, '--requests', String(n)], { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const [sample] = await once(c, 'message') as [Sample]
  await once(c, 'exit')
  return sample
}

const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]! }

export interface HookCost { table: string, setup: string, added: Record<Kind, number>, addedBytes: Record<Kind, number> }

export async function benchHookCost (rounds = 7, requests = 200_000): Promise<HookCost> {
  const rows: string[] = []
  const added = {} as Record<Kind, number>
  const addedBytes = {} as Record<Kind, number>
  for (const kind of KINDS) {
    const bare: Sample[] = []
    const attached: Sample[] = []
    for (let i = 0; i < rounds; i++) {
      const order: Mode[] = i % 2 === 0 ? ['bare', 'attach'] : ['attach', 'bare']
      for (const mode of order) (mode === 'bare' ? bare : attached).push(await round(kind, mode, requests))
    }
    const deltaNs = median(bare.map((b, i) => (attached[i]!.cpuPerRequest - b.cpuPerRequest) * 1000))
    const deltaBytes = median(bare.map((b, i) => attached[i]!.bytesPerRequest - b.bytesPerRequest))
    added[kind] = deltaNs
    addedBytes[kind] = deltaBytes
    const med = (xs: Sample[], k: keyof Sample): number => median(xs.map((x) => x[k]))
    rows.push(`| ${LABEL[kind]} | ${med(bare, 'cpuPerRequest').toFixed(2)} | ${med(attached, 'cpuPerRequest').toFixed(2)} | **${Math.round(deltaNs)}** | ` +
      `${Math.round(med(bare, 'bytesPerRequest'))} | ${Math.round(med(attached, 'bytesPerRequest'))} | **${Math.round(deltaBytes)}** |`)
  }
  const setup = `HTTP/1.1 over in-memory duplex pairs (${CONNECTIONS} keep-alive connections, no sockets; h2c: one session from an in-process node:http2 client, ${CONNECTIONS} streams at a time, its CPU and allocations included on both sides), ${requests} requests per round, ${rounds} alternating rounds, each in a fresh process; the added cost is the median of the per-round differences. Heap per request: V8's sampling heap profiler (one sample per 4 KiB on average) over ${ALLOC_REQUESTS.toLocaleString('en-US')} more requests, garbage included.`
  const table = ['| hello world | CPU µs/request, bare | with attach() | **ns added per request** | heap B/request, bare | with attach() | **B added per request** |', '|---|---:|---:|---:|---:|---:|---:|', ...rows].join('\n')
  return { table, setup, added, addedBytes }
}

const { values } = parseArgs({ options: { child: { type: 'string' }, rounds: { type: 'string', default: '7' }, requests: { type: 'string', default: '200000' } } })
if (values.child !== undefined) {
  const [kind, mode] = values.child.split(':') as [Kind, Mode]
  await child(kind, mode, Number(values.requests))
} else if (import.meta.main) {
  const r = await benchHookCost(Number(values.rounds), Number(values.requests))
  console.log(`${r.setup}\n\n${r.table}`)
}
