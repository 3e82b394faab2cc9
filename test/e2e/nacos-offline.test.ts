// Nacos end to end with scaled windows: a consumer that uses only the nacos
// client's own instance list (subscribe) sends steady keep-alive load to two
// lameduck providers; one goes /offline and then stops; no request fails.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { NacosNamingClient } from 'nacos'
import { Agent, request } from 'undici'
import { startNacos } from '@lameduck/devkit'
import { nacosRegistry, nacosWindows } from '@lameduck/nacos'
import { startProvider, until } from '../helpers.ts'

const quiet = { info () {}, warn () {}, error () {}, debug () {}, log () {} }

for (const push of [true, false]) {
  test(`nacos (push ${push ? 'on' : 'off'}): one of two providers goes /offline under load from a plain nacos-client consumer; zero failures`, async (t) => {
    const server = await startNacos({ port: 0, cacheMillis: 500, pushDelayMs: 100, push })
    t.after(() => server.close())
    // The default 1 s margin covers the SDK's extra second after a subscribe.
    const windows = { ...nacosWindows({ pushDelayMs: 100, cacheMillis: 500, push }) }
    const providers = await Promise.all(['a', 'b'].map((id) => startProvider(id, { registry: nacosRegistry({ serverList: server.serverList, beatIntervalMs: 500 }), windows })))
    const [a, b] = providers as [typeof providers[number], typeof providers[number]]
    t.after(async () => { await a.app.close(); await b.app.close() })

    // The consumer: the unmodified nacos client's subscription, round robin, keep-alive, no retries.
    const client: any = new NacosNamingClient({ logger: quiet as unknown as typeof console, serverList: server.serverList })
    await client.ready()
    let hosts: Array<{ ip: string, port: number }> = []
    client.subscribe('orders', (list: Array<{ ip: string, port: number, healthy: boolean, enabled: boolean }>) => { hosts = list.filter((h) => h.healthy && h.enabled) })
    t.after(() => client.close())
    await until(() => hosts.length === 2, 'the consumer sees both providers', { timeoutMs: 10_000 })
    const agent = new Agent({ keepAliveTimeout: 30_000 })
    t.after(() => agent.close())

    const stats = { ok: 0, failed: [] as string[], byId: new Map<string, number>() }
    let offlineAt = 0
    let lastToA = -1
    const state = { running: true }
    let next = 0
    const loop = async (): Promise<void> => {
      while (state.running) {
        const target = hosts[next++ % Math.max(1, hosts.length)]
        if (target === undefined) { stats.failed.push('no instance'); await new Promise((resolve) => setTimeout(resolve, 5)); continue }
        try {
          const res = await request(`http://${target.ip}:${target.port}/work`, { dispatcher: agent })
          await res.body.dump()
          if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
          const id = String(res.headers['x-instance'])
          stats.ok++
          stats.byId.set(id, (stats.byId.get(id) ?? 0) + 1)
          if (id === 'a' && offlineAt > 0) lastToA = Date.now() - offlineAt
        } catch (err) { stats.failed.push((err as Error).message) }
      }
    }
    const loops = Array.from({ length: 4 }, loop)
    await until(() => (stats.byId.get('a') ?? 0) > 20 && (stats.byId.get('b') ?? 0) > 20, 'traffic on both')

    offlineAt = Date.now()
    const res = await request(`${a.admin}/offline?wait=true`, { method: 'POST' })
    const body = await res.body.json() as { state: string, report: { windowMs: number } }
    assert.equal(body.state, 'offline')
    await a.app.close() // the process stops: anything still routed to a would now fail
    const servedByA = stats.byId.get('a')
    await new Promise((resolve) => setTimeout(resolve, 300))
    state.running = false
    await Promise.all(loops)

    assert.deepEqual(stats.failed, [], 'no request failed')
    assert.equal(stats.byId.get('a'), servedByA, 'nothing reached a after it stopped')
    assert.ok(lastToA <= body.report.windowMs, `the consumer stopped routing to a ${lastToA} ms after /offline, within the ${body.report.windowMs} ms window`)
    t.diagnostic(`push ${push ? 'on' : 'off'}: deregister → consumer stopped routing ${lastToA} ms (window ${body.report.windowMs} ms), ${stats.ok} requests`)
  })
}
