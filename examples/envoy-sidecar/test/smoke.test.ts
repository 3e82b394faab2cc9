// The example end to end: two pods, each a local Envoy (in this process) in
// front of an app (the child process `npm run app` starts), and the consumer in
// this process, durations scaled ×0.05 (window 15 s → 750 ms, Envoy drain time
// 45 s → 2.25 s). Pod b's app starts before its Envoy and must wait for it;
// pod a is taken offline under load through its admin `/offline?wait=true`.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import type { LocalEnvoy } from '@lameduck/devkit'
import { startConsumer } from '../src/consumer.ts'
import { readSettings } from '../src/settings.ts'
import { startSidecar } from '../src/sidecar.ts'
import { gate, until, type Gate } from '@lameduck/test-utils'

const SCALE = '0.05'
const s = readSettings({ SCALE })
const appEntry = fileURLToPath(new URL('../src/app.ts', import.meta.url))

interface App { id: string, admin: string, port: number, child: ChildProcess, output: string[] }

/** `npm run app` for one pod on a port of its own (0); resolves once it listens (it may still wait for its Envoy). */
async function startApp (pod: string, envoy: { admin: number, listen: number }): Promise<App> {
  const child = spawn(process.execPath, ['--conditions=@lameduck/source', appEntry], {
    env: { ...process.env, SCALE, POD: pod, PORT: '0', ADMIN_PORT: '0', ENVOY_ADMIN: `http://127.0.0.1:${envoy.admin}`, ADVERTISE_PORT: String(envoy.listen) },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const output: string[] = []
  createInterface({ input: child.stderr! }).on('line', (line) => output.push(`stderr: ${line}`))
  const m = await new Promise<RegExpMatchArray>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output.push(line)
      const found = line.match(/ {2}(orders-\w) {2}listening on (\S+) behind .*lameduck admin (\S+);/)
      if (found) resolve(found)
    })
    child.once('exit', (code) => reject(new Error(`app ${pod} exited with ${code} before listening:\n${output.join('\n')}`)))
  })
  return { id: m[1]!, admin: m[3]!, port: Number(new URL(m[2]!).port), child, output }
}

async function getJson (url: string, method: 'GET' | 'POST' = 'GET'): Promise<{ status: number, body: Record<string, any> }> {
  const res = await request(url, { method })
  return { status: res.statusCode, body: await res.body.json() as Record<string, any> }
}

describe('examples/envoy-sidecar', () => {
  const envoys: Record<string, LocalEnvoy> = {}
  const apps: Record<string, App> = {}
  const envoyLog: string[] = []
  const gates: Gate[] = []
  let envoyBStartedAt = 0

  before(async () => {
    // Every side listens on port 0; where one must be known before its owner starts,
    // a gate holds the address and forwards once the owner is up (no port changes hands).
    const sidecar = async (pod: string, upstream: string) => await startSidecar({ pod, upstream, listen: 0, admin: 0, settings: s, print: (l) => envoyLog.push(l) })
    // Pod a: Envoy first, its upstream the app that starts next.
    const appA = await gate()
    gates.push(appA)
    envoys.a = await sidecar('a', appA.url())
    // Pod b: the app first, its Envoy's admin and listener not there yet.
    const adminB = await gate()
    const listenB = await gate()
    gates.push(adminB, listenB)
    ;[apps.a, apps.b] = await Promise.all([
      startApp('a', { admin: Number(new URL(envoys.a.adminUrl).port), listen: envoys.a.port }),
      startApp('b', { admin: adminB.port, listen: listenB.port })
    ])
    appA.open(apps.a.port)
    // Pod b's app is up, its sidecar is not: the app must not report ready.
    const early = await getJson(`http://127.0.0.1:${apps.b.port}/health/ready`)
    assert.equal(early.status, 503)
    assert.equal(early.body.state, 'waiting')
    await new Promise((resolve) => setTimeout(resolve, 300))
    envoyBStartedAt = Date.now()
    envoys.b = await sidecar('b', `http://127.0.0.1:${apps.b.port}`)
    adminB.open(Number(new URL(envoys.b.adminUrl).port))
    listenB.open(envoys.b.port)
  })

  after(async () => {
    for (const app of Object.values(apps)) if (app.child.exitCode === null && app.child.signalCode === null) app.child.kill('SIGKILL')
    await Promise.all(Object.values(envoys).map((e) => e.close()))
    await Promise.all(gates.map((g) => g.close()))
  })

  it('waitReady: an app turns ready only once its Envoy is LIVE', async () => {
    const status = await until(async () => {
      const { body } = await getJson(`${apps.b!.admin}/status`)
      return body.state === 'serving' ? body : null
    }, 'app b to serve')
    assert.ok(status.timings.registering >= envoyBStartedAt, 'b became ready only after its sidecar started')
    assert.ok(envoys.b!.adminLog.some((e) => e.url === '/ready'), 'b polled its Envoy\'s /ready')
  })

  it('offline under load: zero failures, Envoy drained only after the 750 ms window, app offline', async () => {
    const consumer = await startConsumer({ targets: [`127.0.0.1:${envoys.a!.port}`, `127.0.0.1:${envoys.b!.port}`], settings: s, rps: 100, summaryMs: 0, print: () => {} })
    try {
      await until(() => (consumer.stats.byInstance.get('orders-a') ?? 0) >= 5 && (consumer.stats.byInstance.get('orders-b') ?? 0) >= 5, 'traffic through both sidecars')
      for (const pod of ['a', 'b'] as const) {
        const hello = await request(`http://127.0.0.1:${envoys[pod]!.port}/hello`)
        assert.equal(hello.statusCode, 200)
        assert.deepEqual(await hello.body.json(), { hello: 'world', instance: `orders-${pod}`, state: 'serving' }, 'GET /hello through the sidecar reaches the app\'s route')
      }
      const { status, body } = await getJson(`${apps.a!.admin}/offline?wait=true`, 'POST')
      assert.equal(status, 200, JSON.stringify(body))
      const report = body.report
      assert.equal(body.state, 'offline')
      assert.equal(report.outcome, 'offline')
      assert.equal(report.windowMs, 750, 'the scaled kubernetes window')
      // No problem means no timeout: the connections closed before drainTimeoutMs (a timeout is reported as a problem).
      assert.deepEqual(report.problems, [], 'the sidecar drained without a problem')
      const drain = envoys.a!.adminLog.find((e) => e.url.startsWith('/drain_listeners'))
      assert.ok(drain, 'the app drained its sidecar')
      assert.equal(drain.method, 'POST')
      assert.match(drain.url, /inboundonly/)
      assert.match(drain.url, /graceful/)
      assert.ok(drain.at - report.startedAt >= 750, `drained only after the window (${drain.at - report.startedAt} ms)`)
      assert.ok(consumer.stats.leaving.has('orders-a'), 'the draining mark went through Envoy to the consumer')
      assert.ok(!consumer.endpoints.ready.includes(`127.0.0.1:${envoys.a!.port}`), 'a left the endpoints (readiness 503)')
      assert.equal(envoys.b!.adminLog.filter((e) => e.url.startsWith('/drain_listeners')).length, 0, 'b\'s sidecar untouched')
    } finally {
      const stats = await consumer.stop()
      assert.equal(stats.failed, 0, stats.errors.slice(0, 5).join('\n'))
    }
  })

  it('SIGTERM: the offline app exits at once, the serving one drains its sidecar first; both exit 0', async () => {
    apps.a!.child.kill('SIGTERM')
    apps.b!.child.kill('SIGTERM')
    const [[codeA], [codeB]] = await Promise.all([once(apps.a!.child, 'exit'), once(apps.b!.child, 'exit')])
    assert.equal(codeA, 0, apps.a!.output.join('\n'))
    assert.equal(codeB, 0, apps.b!.output.join('\n'))
    assert.ok(envoys.b!.adminLog.some((e) => e.method === 'POST' && e.url.startsWith('/drain_listeners')), 'b drained its sidecar on SIGTERM')
    assert.ok(apps.b!.output.some((l) => l.includes('serving → draining (SIGTERM)')), apps.b!.output.join('\n'))
    assert.ok(envoyLog.some((l) => l.includes('envoy-b graceful drain started')), envoyLog.join('\n'))
  })
})
