// The lab's request trace: a failed request says where it went and whether it had a
// socket there, so a rare loss under a hog names its hop (the hog runner keeps only
// assertion messages). Through a plain agent and through the balancer.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import { once } from 'node:events'
import { Agent } from 'undici'
import { createBalancer, staticDiscovery } from '@lameduck/balancer'
import { deadPort } from '@lameduck/test-utils'
import { LoadGenerator } from '../src/rollout/load.ts'
import { RequestTrace } from '../src/rollout/trace.ts'

/** A server that reads every request and never answers. */
async function silent (): Promise<{ server: Server, origin: string }> {
  const server = createServer(() => {})
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { server, origin: `http://127.0.0.1:${(server.address() as { port: number }).port}` }
}

async function run (load: LoadGenerator, until: () => boolean): Promise<void> {
  load.start()
  while (!until()) await new Promise((resolve) => setTimeout(resolve, 20))
  await load.stop()
}

test('trace: a request held by the instance names it and its socket; a refused one never had a socket', async (t) => {
  const held = await silent()
  const dead = await deadPort()
  const trace = new RequestTrace()
  const agent = new Agent({ factory: trace.factory })
  t.after(async () => { await agent.destroy(); held.server.closeAllConnections(); held.server.close(); await dead.close() })

  const targets = [held.origin, dead.url()]
  let next = 0
  const load = new LoadGenerator({ url: (path) => `${targets[next++ % 2]!.replace(/\/$/, '')}${path}`, dispatcher: agent, rps: 50, timeoutMs: 300, trace })
  await run(load, () => load.records.filter((r) => r.outcome === 'timeout').length >= 2 && load.records.some((r) => r.outcome === 'refused'))

  const timeouts = load.records.filter((r) => r.outcome === 'timeout')
  assert.ok(timeouts.length > 0)
  for (const r of timeouts) {
    assert.equal(r.to, held.origin, JSON.stringify(r))
    assert.ok(typeof r.socketMs === 'number' && r.socketMs >= 0 && r.socketMs < r.ms, `a socket before the timeout: ${JSON.stringify(r)}`)
  }
  const refused = load.records.filter((r) => r.outcome === 'refused')
  for (const r of refused) {
    assert.equal(r.to, dead.url().replace(/\/$/, ''), JSON.stringify(r))
    assert.equal(r.socketMs, undefined, `never had a socket: ${JSON.stringify(r)}`)
  }
})

test('trace: through the balancer, the failed attempt\'s instance; answered requests carry nothing', async (t) => {
  const held = await silent()
  const ok = createServer((_req, res) => res.end('ok'))
  ok.listen(0, '127.0.0.1')
  await once(ok, 'listening')
  const okPort = (ok.address() as { port: number }).port
  const heldPort = Number(new URL(held.origin).port)
  const trace = new RequestTrace()
  const discovery = staticDiscovery({ orders: [`127.0.0.1:${heldPort}`, `127.0.0.1:${okPort}`] })
  const balancer = createBalancer({ service: 'orders', discovery, factory: trace.factory, retryIdempotent: false })
  t.after(async () => { await balancer.destroy(); held.server.closeAllConnections(); held.server.close(); ok.closeAllConnections(); ok.close() })

  const load = new LoadGenerator({ url: (path) => `http://orders${path}`, dispatcher: balancer, rps: 50, timeoutMs: 300, trace })
  await run(load, () => load.records.some((r) => r.outcome === 'timeout') && load.records.some((r) => r.outcome === 'ok'))

  for (const r of load.records.filter((r) => r.outcome === 'timeout')) {
    assert.equal(r.to, held.origin, JSON.stringify(r))
    assert.equal(typeof r.socketMs, 'number', JSON.stringify(r))
  }
  for (const r of load.records.filter((r) => r.outcome === 'ok')) assert.equal(r.to, undefined, JSON.stringify(r))
})
