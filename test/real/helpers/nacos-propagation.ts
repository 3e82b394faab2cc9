// Propagation on the real path: real Nacos server → real Java nacos-client →
// requests to a Node provider. Two providers stay registered (with beats); one
// is deregistered and re-registered `drains` times while the Java consumer
// calls them round robin. Per drain: the time from the confirmed
// deregistration (DELETE answered ok and the server's list no longer has it)
// to the consumer's last request to the leaving instance.
import { createServer, type Server } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { nacosWindows } from '@lameduck/nacos'
import { until } from '../../helpers.ts'
import { startJavaConsumer } from './nacos-consumer.ts'
import { listHosts, startTarget } from './nacos-targets.ts'

const SERVICE = 'orders'
const IP = '127.0.0.1'

export interface PropagationRun {
  push: boolean
  /** What the server handed the client as its poll period (0.8.0: pushCacheMillis ≥ 10 s with push, else defaultCacheMillis). */
  cacheMillis: number
  drains: Array<{ lastRequestMs: number, listDroppedMs: number, requestsAfter: number }>
  window: { totalMs: number, parts: ReturnType<typeof nacosWindows> }
}

async function provider (): Promise<{ server: Server, port: number }> {
  const server = createServer((req, res) => { res.end('ok') })
  server.listen(0, IP)
  await once(server, 'listening')
  return { server, port: (server.address() as AddressInfo).port }
}

export async function measureNacosPropagation (options: { push: boolean, drains: number, cacheMillis?: number }): Promise<PropagationRun> {
  const cacheMillis = options.cacheMillis ?? 1_000
  const target = await startTarget('2.3.1', { cacheMillis })
  const providers = await Promise.all([provider(), provider()])
  const [leaving, staying] = providers.map((p) => p.port) as [number, number]
  const registered = new Set<number>()
  const inFlight = new Set<Promise<unknown>>()
  const beat = (port: number): void => {
    const sent = target.call('PUT', '/instance/beat', { serviceName: SERVICE, beat: JSON.stringify({ ip: IP, port, serviceName: SERVICE, cluster: 'DEFAULT' }) }).catch(() => {})
    inFlight.add(sent)
    sent.finally(() => inFlight.delete(sent)).catch(() => {})
  }
  const beats = setInterval(() => { for (const port of registered) beat(port) }, 2_000)
  const register = async (port: number): Promise<void> => {
    const answer = await target.call('POST', '/instance', { serviceName: SERVICE, ip: IP, port })
    if (answer.text !== 'ok') throw new Error(`register ${port}: ${answer.status} ${answer.text}`)
    registered.add(port)
  }
  let consumer: Awaited<ReturnType<typeof startJavaConsumer>> | undefined
  try {
    await register(staying)
    await register(leaving)
    await until(async () => (await listHosts(target, SERVICE)).length === 2, 'both providers listed')
    consumer = await startJavaConsumer(target.serverList, SERVICE)
    const c = consumer
    const listedBack = (): number => c.hosts.findLast((h) => h.ports.includes(leaving))?.t ?? Infinity
    const drains: PropagationRun['drains'] = []
    for (let i = 0; i < options.drains; i++) {
      // Steady state first: the consumer lists both and has called the leaving one since.
      await until(() => c.ports().length === 2 && c.requests.some((r) => r.port === leaving && r.t > listedBack()), 'the consumer calling both providers', 30_000)
      // Stop beating first, as a provider does: a beat that lands after the DELETE re-registers the instance.
      registered.delete(leaving)
      await Promise.all(inFlight)
      const answer = await target.call('DELETE', '/instance', { serviceName: SERVICE, ip: IP, port: leaving })
      if (answer.text !== 'ok') throw new Error(`deregister: ${answer.status} ${answer.text}`)
      await until(async () => !(await listHosts(target, SERVICE)).some((h) => h.port === leaving), 'the server to drop the instance', 10_000, 2)
      const confirmedAt = Date.now()
      await until(() => !c.ports().includes(leaving), 'the consumer to drop the instance', 60_000)
      const dropped = c.hosts.at(-1)!.t
      // A request already begun may still be logged after the list changed: let it land.
      await new Promise((resolve) => setTimeout(resolve, 50))
      const after = c.requests.filter((r) => r.port === leaving && r.t >= confirmedAt)
      const last = Math.max(confirmedAt, ...after.map((r) => r.t))
      drains.push({ lastRequestMs: last - confirmedAt, listDroppedMs: Math.max(0, dropped - confirmedAt), requestsAfter: after.length })
      await register(leaving)
    }
    const parts = nacosWindows({ cacheMillis: options.push ? 10_000 : cacheMillis, push: options.push })
    const totalMs = Object.values(parts).reduce((a, b) => a + b, 0)
    return { push: options.push, cacheMillis: options.push ? 10_000 : cacheMillis, drains, window: { totalMs, parts } }
  } finally {
    clearInterval(beats)
    await consumer?.close()
    for (const p of providers) p.server.close()
    await target.close()
  }
}

export function summarize (run: PropagationRun): { max: number, p50: number, p95: number, listMax: number } {
  const sorted = run.drains.map((d) => d.lastRequestMs).sort((a, b) => a - b)
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
  return { max: sorted.at(-1) ?? 0, p50: at(0.5), p95: at(0.95), listMax: Math.max(0, ...run.drains.map((d) => d.listDroppedMs)) }
}

/** A markdown table row per run, the window's parts beside the measurement. */
export function propagationTable (runs: PropagationRun[]): string {
  const lines = ['| path | push | client poll (ms) | drains | last request after confirmed deregistration: p50 / p95 / max (ms) | consumer list dropped it, max (ms) | nacosWindows(): server + fetch + margin = total (ms) | covered |',
    '|---|---|---|---|---|---|---|---|']
  for (const run of runs) {
    const s = summarize(run)
    const p = run.window.parts
    lines.push(`| real Nacos 0.8.0 → Java nacos-client 0.8.0 | ${run.push ? 'on' : 'off'} | ${run.cacheMillis} | ${run.drains.length} | ${s.p50} / ${s.p95} / ${s.max} | ${s.listMax} | ${p.serverCacheMs} + ${p.clientFetchMs} + ${p.marginMs} = ${run.window.totalMs} | ${s.max <= run.window.totalMs ? 'yes' : '**no**'} |`)
  }
  return lines.join('\n')
}
