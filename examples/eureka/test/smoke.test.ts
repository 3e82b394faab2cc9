// The example end to end: the local Eureka server and the consumer in this
// process, two providers as the child processes `npm run provider` starts,
// windows scaled ×0.01 (30 s + 30 s + 30 s → 900 ms, plus 1 s of margin for a
// busy test machine, as the rollout lab adds). A provider is taken
// offline under load through its admin `/offline?wait=true`, once with the
// lameduck balancer and once with a plain round-robin consumer.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import { startEureka, type EurekaServer } from '@lameduck/devkit'
import { startConsumer } from '../src/consumer.ts'
import { eurekaServerOptions } from '../src/server.ts'
import { readSettings, type Settings } from '../src/settings.ts'
import { until } from '@lameduck/test-utils'

const SCALE = '0.01'
const MARGIN_MS = 1_000
const WINDOW_MS = 900 + MARGIN_MS
const providerEntry = fileURLToPath(new URL('../src/provider.ts', import.meta.url))

interface Provider { id: string, admin: string, child: ChildProcess, output: string[] }

/** `npm run provider` with PORT=0 ADMIN_PORT=0; resolves once it printed its addresses. */
async function startProvider (eurekaUrl: string): Promise<Provider> {
  const child = spawn(process.execPath, ['--conditions=@lameduck/source', providerEntry], {
    env: { ...process.env, SCALE, MARGIN_MS: String(MARGIN_MS), EUREKA_URL: eurekaUrl, PORT: '0', ADMIN_PORT: '0', BOOT_MS: '200' },
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

describe('examples/eureka', () => {
  let eureka: EurekaServer
  let s: Settings
  let a: Provider
  let b: Provider

  before(async () => {
    eureka = await startEureka({ ...eurekaServerOptions(readSettings({ SCALE })), port: 0 })
    s = readSettings({ SCALE, EUREKA_URL: eureka.url })
    ;[a, b] = await Promise.all([startProvider(eureka.url), startProvider(eureka.url)])
  })

  after(async () => {
    for (const p of [a, b]) if (p && p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
    await eureka?.close()
  })

  it('the lameduck balancer: zero failures, told in-band, provider offline after the window', async () => {
    assert.equal(s.responseCacheUpdateIntervalMs + s.registryFetchIntervalMs + s.balancerRefreshMs, 900)
    const consumer = await startConsumer({ settings: s, rps: 100, summaryMs: 0, print: () => {} })
    try {
      await until(() => (consumer.stats.byInstance.get(a.id) ?? 0) >= 5 && (consumer.stats.byInstance.get(b.id) ?? 0) >= 5, 'traffic to both providers')
      for (const p of [a, b]) {
        const hello = await request(`http://127.0.0.1:${portOf(p)}/hello`)
        assert.equal(hello.statusCode, 200)
        assert.deepEqual(await hello.body.json(), { hello: 'world', instance: p.id, state: 'serving' }, 'GET /hello is the provider\'s route')
      }
      const { state, report } = await admin(a, '/offline?wait=true')
      assert.equal(state, 'offline')
      assert.equal(report.outcome, 'offline')
      assert.equal(report.windowMs, WINDOW_MS, 'the scaled eureka-ribbon window and the margin')
      assert.ok(report.windowEndedAt - report.deregisteredAt >= WINDOW_MS, 'the whole window was waited out')
      assert.deepEqual(report.problems, [])
      assert.ok(consumer.stats.leaving.has(a.id), 'the consumer was told in-band that a is leaving')
      assert.ok(!eureka.snapshot().some((i) => i.id === a.id), 'a is no longer in Eureka')
      await until(() => !consumer.discovery.instances('orders').some((i) => i.port === portOf(a)), 'the consumer\'s Eureka view to drop a', { timeoutMs: 3_000 })
      const before = consumer.stats.byInstance.get(b.id)!
      await until(() => consumer.stats.byInstance.get(b.id)! > before + 20, 'b to take the traffic')
    } finally {
      const stats = await consumer.stop()
      assert.equal(stats.failed, 0, stats.errors.slice(0, 5).join('\n'))
    }
  })

  it('a plain consumer keeps routing to a through the window; nothing fails because a keeps serving', async () => {
    await admin(a, '/online?wait=true')
    const consumer = await startConsumer({ settings: s, rps: 200, summaryMs: 0, print: () => {}, plain: true })
    try {
      await until(() => (consumer.stats.byInstance.get(a.id) ?? 0) >= 5 && (consumer.stats.byInstance.get(b.id) ?? 0) >= 5, 'round robin over both providers')
      const { report } = await admin(a, '/offline?wait=true')
      assert.equal(report.outcome, 'offline')
      assert.ok(report.requestsWhileDraining > 0, 'stale caches still routed to a after it deregistered')
      // Keep sending until the consumer's last cache let go of a: its Eureka view, then one more list refresh.
      await until(() => !consumer.discovery.instances('orders').some((i) => i.port === portOf(a)), 'the consumer\'s Eureka view to drop a', { timeoutMs: 3_000 })
      await new Promise((resolve) => setTimeout(resolve, s.balancerRefreshMs + 100))
      const lastToA = consumer.stats.lastAt.get(a.id)!
      assert.ok(lastToA <= report.windowEndedAt, `every stale route ended within the window (last answer ${lastToA - report.deregisteredAt} ms after deregistration)`)
    } finally {
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
  })
})
