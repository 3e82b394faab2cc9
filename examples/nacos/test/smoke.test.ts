// The example end to end: the local Nacos server and the consumer in this
// process, two providers as the child processes `npm run provider` starts,
// windows scaled ×0.1 (500 ms push + 10 s poll + 1 s margin → 1150 ms, plus
// 1 s of margin for a busy test machine, as the rollout lab adds). A
// provider is taken offline under load through its admin `/offline?wait=true`,
// once with the lameduck balancer and UDP push, once with a plain consumer
// and push off, so only the client's poll tells it.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import { startNacos, type NacosServer } from '@lameduck/devkit'
import { startConsumer } from '../src/consumer.ts'
import { nacosServerOptions } from '../src/server.ts'
import { readSettings, type Settings } from '../src/settings.ts'
import { until } from '@lameduck/test-utils'

const SCALE = '0.1'
const MARGIN_MS = 1_000
// Scaled push delay, poll and margin (1150) + the server's 100 ms push-task check, a fixed delay.
const WINDOW_MS = 1_150 + 100 + MARGIN_MS
const providerEntry = fileURLToPath(new URL('../src/provider.ts', import.meta.url))

interface Provider { id: string, admin: string, child: ChildProcess, output: string[] }

/** `npm run provider` with PORT=0 ADMIN_PORT=0; resolves once it printed its addresses. */
async function startProvider (serverList: string): Promise<Provider> {
  const child = spawn(process.execPath, ['--conditions=@lameduck/source', providerEntry], {
    env: { ...process.env, SCALE, MARGIN_MS: String(MARGIN_MS), NACOS_SERVER: serverList, PORT: '0', ADMIN_PORT: '0', BOOT_MS: '200' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const output: string[] = []
  createInterface({ input: child.stderr! }).on('line', (line) => output.push(`stderr: ${line}`))
  const listening = await new Promise<RegExpMatchArray>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output.push(line)
      const m = line.match(/ {2}(\S+) {2}listening on \S+, admin (\S+);/)
      if (m) resolve(m)
    })
    child.once('exit', (code) => reject(new Error(`provider exited with ${code} before listening:\n${output.join('\n')}`)))
  })
  return { id: listening[1]!, admin: listening[2]!, child, output }
}

const portOf = (p: Provider): number => Number(p.id.split(':').at(-1))

async function admin (p: Provider, path: string): Promise<Record<string, any>> {
  const res = await request(`${p.admin}${path}`, { method: 'POST' })
  const body = await res.body.json() as Record<string, any>
  assert.equal(res.statusCode, 200, `${path}: ${JSON.stringify(body)}`)
  return body
}

describe('examples/nacos', () => {
  let nacos: NacosServer
  let s: Settings
  let a: Provider
  let b: Provider
  const listed = (list: Array<{ port: number }>, p: Provider): boolean => list.some((i) => i.port === portOf(p))

  before(async () => {
    nacos = await startNacos({ ...nacosServerOptions(readSettings({ SCALE })), port: 0 })
    s = readSettings({ SCALE, NACOS_SERVER: nacos.serverList })
    ;[a, b] = await Promise.all([startProvider(nacos.serverList), startProvider(nacos.serverList)])
  })

  after(async () => {
    for (const p of [a, b]) if (p && p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
    await nacos?.close()
  })

  it('push: the lameduck balancer loses nothing, is told in-band, and the push drops a within the window', async () => {
    assert.equal(s.pushDelayMs + s.cacheMillis + s.marginMs, 1150)
    const consumer = await startConsumer({ settings: s, rps: 100, summaryMs: 0, print: () => {} })
    try {
      await until(() => (consumer.stats.byInstance.get(a.id) ?? 0) >= 5 && (consumer.stats.byInstance.get(b.id) ?? 0) >= 5, 'traffic to both providers')
      for (const p of [a, b]) {
        const hello = await request(`http://127.0.0.1:${portOf(p)}/hello`)
        assert.equal(hello.statusCode, 200)
        assert.deepEqual(await hello.body.json(), { hello: 'world', instance: p.id, state: 'serving' }, 'GET /hello is the provider\'s route')
      }
      let droppedAt = 0
      const unsubscribe = consumer.discovery.subscribe('orders', (list) => { if (droppedAt === 0 && !listed(list, a)) droppedAt = Date.now() })
      const pushes: number[] = []
      const onPush = (p: { hosts: number }): void => { pushes.push(p.hosts) }
      nacos.events.on('push', onPush)
      const { state, report } = await admin(a, '/offline?wait=true')
      nacos.events.off('push', onPush)
      unsubscribe()
      assert.equal(state, 'offline')
      assert.equal(report.outcome, 'offline')
      assert.equal(report.windowMs, WINDOW_MS, 'the scaled nacos window and the margin')
      assert.ok(report.windowEndedAt - report.deregisteredAt >= WINDOW_MS, 'the whole window was waited out')
      assert.deepEqual(report.problems, [])
      assert.ok(consumer.stats.leaving.has(a.id), 'the consumer was told in-band that a is leaving')
      assert.equal(nacos.instances('orders').filter((i) => i.port === portOf(a)).length, 0, 'a is no longer in Nacos')
      assert.ok(pushes.includes(1), `the server pushed the one-instance list (pushes: ${pushes.join(', ')})`)
      assert.ok(droppedAt > 0 && droppedAt <= report.windowEndedAt, 'the consumer\'s Nacos list dropped a during the window')
    } finally {
      const stats = await consumer.stop()
      assert.equal(stats.failed, 0, stats.errors.slice(0, 5).join('\n'))
    }
  })

  it('push off: a plain consumer routes to a until its next poll, inside the window; nothing fails', async () => {
    await admin(a, '/online?wait=true')
    const consumer = await startConsumer({ settings: s, rps: 200, summaryMs: 0, print: () => {}, plain: true })
    try {
      await until(() => (consumer.stats.byInstance.get(a.id) ?? 0) >= 5 && (consumer.stats.byInstance.get(b.id) ?? 0) >= 5, 'round robin over both providers')
      nacos.setPush(false)
      const pushed = nacos.stats().pushes.sent
      const { report } = await admin(a, '/offline?wait=true')
      assert.equal(report.outcome, 'offline')
      assert.ok(report.requestsWhileDraining > 0, 'the stale list still routed to a after it deregistered')
      await until(() => !listed(consumer.discovery.instances('orders'), a), 'the consumer\'s poll to drop a', { timeoutMs: 3_000 })
      assert.equal(nacos.stats().pushes.sent, pushed, 'no push: the consumer learned by polling')
      const lastToA = consumer.stats.lastAt.get(a.id)!
      assert.ok(lastToA <= report.windowEndedAt, `every stale route ended within the window (last answer ${lastToA - report.deregisteredAt} ms after deregistration)`)
    } finally {
      nacos.setPush(true)
      const stats = await consumer.stop()
      assert.equal(stats.failed, 0, stats.errors.slice(0, 5).join('\n'))
    }
  })

  it('SIGTERM: the offline provider stops at once, the serving one drains first; both exit 0', async () => {
    const started = Date.now()
    a.child.kill('SIGTERM')
    b.child.kill('SIGTERM')
    const [[codeA], [codeB]] = await Promise.all([once(a.child, 'exit'), once(b.child, 'exit')])
    assert.equal(codeA, 0, a.output.join('\n'))
    assert.equal(codeB, 0, b.output.join('\n'))
    assert.ok(Date.now() - started >= WINDOW_MS, 'b waited out its window before exiting')
    assert.ok(b.output.some((l) => l.includes('serving → draining (SIGTERM)')), b.output.join('\n'))
    assert.ok(b.output.some((l) => l.includes('closing → stopped')), b.output.join('\n'))
    assert.equal(nacos.instances('orders').length, 0, 'both deregistered')
  })
})
