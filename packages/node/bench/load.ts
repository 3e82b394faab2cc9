// Load generators for the overhead bench: autocannon for HTTP/1.1, h2load
// (Debian's nghttp2-client) for h2c when installed, else a node:http2 client
// loop. Each warms up first, calls `measure` around the measured run, returns
// its requests/s and how many succeeded, and throws on any failed request.
import { spawn, spawnSync } from 'node:child_process'
import { Agent, request } from 'node:http'
import { connect, type ClientHttp2Session } from 'node:http2'
import type { OpenLoad } from '@lameduck/test-utils'
import autocannon from 'autocannon'

export interface Load { rps: number, ok: number }
export type Measure = <T>(run: () => Promise<T>) => Promise<T>

export async function http1 (port: number, seconds: number, measure: Measure, tls = false): Promise<Load> {
  const url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}/`
  await autocannon({ url, connections: 50, duration: 1 }) // warm up the JIT
  const result = await measure(() => autocannon({ url, connections: 50, pipelining: 1, duration: seconds }))
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx, ${result.errors} errors`)
  return { rps: result.requests.average, ok: result['2xx'] }
}

/** Whether `h2load` is on the PATH (apt-get install nghttp2-client). */
export const hasH2load = spawnSync('h2load', ['--version']).status === 0

/** 10 h2c sessions × 10 concurrent streams, the same shape for both generators. */
const SESSIONS = 10
const STREAMS = 10

export async function h2 (port: number, seconds: number, measure: Measure, pin: string[], tls = false): Promise<Load> {
  const origin = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`
  if (!hasH2load) return h2loop(origin, seconds, measure)
  await h2load(origin, 1, pin) // warm up the JIT
  return measure(() => h2load(origin, seconds, pin))
}

async function h2load (origin: string, seconds: number, pin: string[]): Promise<Load> {
  const args = ['-c', String(SESSIONS), '-m', String(STREAMS), '-D', String(seconds), `${origin}/`]
  const [cmd, ...rest] = [...pin, 'h2load', ...args]
  const run = await new Promise<{ status: number | null, stdout: string, stderr: string }>((resolve) => {
    const child = spawn(cmd!, rest)
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => { stdout += d })
    child.stderr.on('data', (d: Buffer) => { stderr += d })
    child.on('close', (status) => resolve({ status, stdout, stderr }))
  })
  const out = `${run.stdout}${run.stderr}`
  const rate = out.match(/finished in [\d.]+\w+, ([\d.]+) req\/s/)
  const counts = out.match(/requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored/)
  const codes = out.match(/status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/)
  if (run.status !== 0 || !rate || !counts || !codes) throw new Error(`h2load failed (exit ${run.status}):\n${out}`)
  if (Number(counts[2]) + Number(counts[3]) > 0 || Number(codes[4]) + Number(codes[3]) > 0) throw new Error(`h2load: failed requests:\n${out}`)
  return { rps: Number(rate[1]), ok: Number(counts[1]) }
}

/** Fallback without h2load: node:http2 sessions, each keeping STREAMS requests in flight. */
async function h2loop (origin: string, seconds: number, measure: Measure): Promise<Load> {
  // A self-signed bench certificate: nothing to verify it against.
  const sessions: ClientHttp2Session[] = Array.from({ length: SESSIONS }, () => connect(origin, { rejectUnauthorized: false }))
  const one = (s: ClientHttp2Session): Promise<void> => new Promise((resolve, reject) => {
    const stream = s.request({ ':path': '/' })
    stream.on('response', (h) => { if (h[':status'] !== 200) reject(new Error(`status ${h[':status']}`)) })
    stream.on('error', reject)
    stream.resume()
    stream.on('end', resolve)
  })
  const run = async (ms: number): Promise<Load> => {
    let done = 0
    const until = Date.now() + ms
    await Promise.all(sessions.flatMap((s) => Array.from({ length: STREAMS }, async () => {
      while (Date.now() < until) { await one(s); done++ }
    })))
    return { rps: done / (ms / 1_000), ok: done }
  }
  try {
    await run(1_000) // warm up the JIT
    return await measure(() => run(seconds * 1_000))
  } finally {
    for (const s of sessions) s.close()
  }
}

/**
 * Keep-alive GETs of `/` for the callgrind benches, one at a time on each of `connections`
 * connections: one agent per server, so the measured batch runs on the warm-up's sockets.
 */
export const keepAliveGets = (connections: number): OpenLoad => (port) => {
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const one = (): Promise<void> => new Promise((resolve, reject) => {
    request({ port, host: '127.0.0.1', path: '/', agent }, (res) => {
      res.resume()
      res.on('end', () => res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`)))
    }).on('error', reject).end()
  })
  return {
    run: async (n) => {
      let left = n
      await Promise.all(Array.from({ length: connections }, async () => { while (left-- > 0) await one() }))
    },
    close: () => { agent.destroy() }
  }
}
