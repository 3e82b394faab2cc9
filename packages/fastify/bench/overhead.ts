// Requests/s of a hello-world Fastify app, bare vs with @lameduck/fastify, in the
// same run. The server runs in a child process so the load generator does not
// share its event loop; rounds alternate so drift hits both sides alike.
//   node --conditions=@lameduck/source packages/fastify/bench/overhead.ts [--rounds 5] [--seconds 3]
import { fork, spawnSync } from 'node:child_process'
import { cpus } from 'node:os'
import { once } from 'node:events'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import Fastify from 'fastify'
import { memoryRegistry } from '@lameduck/core'
import lameduck from '@lameduck/fastify'

async function serve (mode: 'bare' | 'plugin'): Promise<void> {
  const app = Fastify({ logger: false })
  if (mode === 'plugin') {
    await app.register(lameduck, { service: 'bench', host: '127.0.0.1', registry: memoryRegistry(), windows: 'none', admin: { port: 0 }, signals: false })
  }
  app.get('/', async () => ({ hello: 'world' }))
  await app.listen({ host: '127.0.0.1', port: 0 })
  process.send!({ port: (app.server.address() as { port: number }).port })
  process.on('disconnect', () => { app.close().finally(() => process.exit(0)) })
}

// With taskset, the server and the load generator get a core each instead of
// fighting over the same one (the rest of the noise is the machine's).
const pinned = process.platform === 'linux' && cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0

async function round (mode: 'bare' | 'plugin', seconds: number): Promise<number> {
  // Started on its core with every thread (taskset in front of node): moved after it started, only its
  // main thread went, and V8's GC helpers ran beside the load generator, out of the measure.
  const onCore = pinned ? { execPath: 'taskset', execArgv: ['-c', '1', process.execPath, ...process.execArgv] } : { execArgv: process.execArgv }
  const child = fork(new URL(import.meta.url), ['--serve', mode], { ...onCore, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const [{ port }] = await once(child, 'message') as [{ port: number }]
  await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 50, duration: 1 }) // warm up the JIT
  const result = await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 50, pipelining: 1, duration: seconds })
  child.disconnect()
  await once(child, 'exit')
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${mode}: ${result.non2xx} non-2xx, ${result.errors} errors`)
  return result.requests.average
}

const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]! }

export async function benchOverhead (rounds = 5, seconds = 3): Promise<{ bare: number, plugin: number, ratio: number, rounds: number, table: string }> {
  const allCores = `0-${cpus().length - 1}`
  if (pinned) spawnSync('taskset', ['-apc', '0', String(process.pid)])
  const bare: number[] = []
  const plugin: number[] = []
  for (let i = 0; i < rounds; i++) {
    // Alternate which side goes first.
    if (i % 2 === 0) { bare.push(await round('bare', seconds)); plugin.push(await round('plugin', seconds)) } else { plugin.push(await round('plugin', seconds)); bare.push(await round('bare', seconds)) }
  }
  if (pinned) spawnSync('taskset', ['-apc', allCores, String(process.pid)])
  const b = median(bare)
  const p = median(plugin)
  const table = [
    `${pinned ? 'Server and load generator pinned to separate cores (taskset, every thread of each).' : 'Not pinned (no taskset): expect more noise.'}`,
    '',
    '| hello-world Fastify | median req/s | rounds (req/s) |',
    '|---|---:|---|',
    `| bare | ${Math.round(b)} | ${bare.map(Math.round).join(', ')} |`,
    `| with @lameduck/fastify | ${Math.round(p)} | ${plugin.map(Math.round).join(', ')} |`,
    `| **ratio** | **${(p / b).toFixed(3)}** | goal ≥ 0.98 |`
  ].join('\n')
  return { bare: b, plugin: p, ratio: p / b, rounds, table }
}

const { values } = parseArgs({ options: { serve: { type: 'string' }, rounds: { type: 'string', default: '5' }, seconds: { type: 'string', default: '3' } } })
if (values.serve === 'bare' || values.serve === 'plugin') {
  await serve(values.serve)
} else if (import.meta.main) {
  const r = await benchOverhead(Number(values.rounds), Number(values.seconds))
  console.log(r.table)
}
