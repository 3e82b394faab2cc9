import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fork, spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { createInterface } from 'node:readline'
import { Pool, request } from 'undici'
import { until } from './helpers.ts'

interface Line { t: number, event: string, worker?: number, to?: string, admin?: string, url?: string, message?: string }
const parse = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => Array<{ name: string, metrics: Array<{ labels?: Record<string, string>, value: string }> }>

function spawnPod (args: string[]) {
  const child = fork(new URL('./fixtures/cluster-app.ts', import.meta.url), args, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
  const lines: Line[] = []
  createInterface({ input: child.stdout! }).on('line', (l) => { try { lines.push(JSON.parse(l) as Line) } catch {} })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return { child, lines, exited, stop: async () => { child.kill('SIGTERM'); await exited } }
}

/** Steady keep-alive load: `concurrency` loops of GET / until stopped; counts answers per worker and failures. */
function load (url: string, concurrency: number) {
  const pool = new Pool(url, { connections: concurrency, keepAliveTimeout: 60_000 })
  const stats = { ok: 0, failed: 0, errors: [] as string[], byWorker: new Map<string, number>() }
  const running = { on: true }
  const loops = Array.from({ length: concurrency }, async () => {
    while (running.on) {
      try {
        const res = await pool.request({ path: '/', method: 'GET' })
        await res.body.dump()
        if (res.statusCode === 200) {
          stats.ok++
          const w = String(res.headers['x-worker'])
          stats.byWorker.set(w, (stats.byWorker.get(w) ?? 0) + 1)
        } else { stats.failed++; stats.errors.push(String(res.statusCode)) }
      } catch (err) { stats.failed++; stats.errors.push((err as { code?: string }).code ?? (err as Error).message) }
    }
  })
  return { stats, stop: async () => { running.on = false; await Promise.all(loops); await pool.close() } }
}

test('node:cluster: clusterAdmin() in the primary drains both workers with one /offline?wait=true, 0 requests lost under load', async (t) => {
  const pod = spawnPod(['ipc'])
  t.after(() => pod.stop())
  await until(() => pod.lines.some((l) => l.event === 'ready'), 'both workers serving', 20_000)
  const { admin, url } = pod.lines.find((l) => l.event === 'ready')!
  const traffic = load(url!, 8)
  await until(() => traffic.stats.byWorker.size === 2, 'both workers answering')
  const started = Date.now()
  const res = await request(`${admin!}/offline?wait=true`, { method: 'POST' })
  const body = await res.body.json() as { state: string, report: { outcome: string }, workers: Array<{ worker: number, state: string, report: { outcome: string, windowMs: number } }> }
  assert.equal(res.statusCode, 200)
  assert.ok(Date.now() - started >= 800, 'answered after the window')
  assert.equal(body.state, 'offline')
  assert.equal(body.report.outcome, 'offline', 'one report for single-process clients (lameduck prestop)')
  assert.equal(body.workers.length, 2)
  assert.deepEqual(body.workers.map((w) => [w.state, w.report.outcome, w.report.windowMs]), [['offline', 'offline', 800], ['offline', 'offline', 800]])
  const during = { ...traffic.stats }
  await new Promise((resolve) => setTimeout(resolve, 100)) // a little load after the drain too: offline workers still answer until they close
  await traffic.stop()
  assert.equal(traffic.stats.failed, 0, `lost: ${traffic.stats.errors.join(', ')}`)
  assert.ok(during.ok > 20, `served during the drain: ${during.ok}`)
  for (const w of [1, 2]) {
    assert.deepEqual(pod.lines.filter((l) => l.event === 'state' && l.worker === w).map((l) => l.to), ['waiting', 'registering', 'serving', 'draining', 'offline'], `worker ${w}`)
  }

  const status = await (await request(`${admin!}/status`)).body.json() as { state: string, workers: Array<{ state: string }> }
  assert.equal(status.state, 'offline')
  assert.equal(status.workers.length, 2)
  const families = parse(await (await request(`${admin!}/metrics`)).body.text())
  const offline = families.find((f) => f.name === 'lameduck_state')!.metrics.filter((m) => m.labels?.state === 'offline')
  assert.deepEqual(offline.map((m) => [m.labels?.worker, m.value]).sort(), [['1', '1'], ['2', '1']], 'one family, a sample per worker')

  const on = await request(`${admin!}/online?wait=true`, { method: 'POST' })
  assert.equal(on.statusCode, 200)
  assert.equal((await on.body.json() as { state: string }).state, 'serving')
})

test('admin.port \'auto\' in each worker: a port of its own, so /offline reaches the worker it names', async (t) => {
  // Negative control for the exclusive bind: a plain listen(0) in cluster workers shares one port through
  // the primary, and each /offline would reach whichever worker the round robin picked.
  const pod = spawnPod(['auto'])
  t.after(() => pod.stop())
  await until(() => pod.lines.some((l) => l.event === 'ready'), 'both workers serving', 20_000)
  const urls = pod.lines.filter((l) => l.event === 'admin').sort((a, b) => a.worker! - b.worker!).map((l) => l.url!)
  assert.equal(urls.length, 2)
  assert.notEqual(new URL(urls[0]!).port, new URL(urls[1]!).port, 'two admin ports')
  for (let i = 0; i < 4; i++) {
    const res = await request(`${urls[0]!}/offline`, { method: 'POST' })
    assert.equal(res.statusCode, 202)
    await res.body.dump()
  }
  await until(() => pod.lines.some((l) => l.event === 'state' && l.worker === 1 && l.to === 'offline'), 'worker 1 offline')
  assert.equal((await (await request(`${urls[1]!}/status`)).body.json() as { state: string }).state, 'serving', 'worker 2 untouched')
})

test('node:cluster: `lameduck prestop` against clusterAdmin() drains every worker and exits 0, 0 requests lost', async (t) => {
  const pod = spawnPod(['ipc'])
  t.after(() => pod.stop())
  await until(() => pod.lines.some((l) => l.event === 'ready'), 'both workers serving', 20_000)
  const { admin, url } = pod.lines.find((l) => l.event === 'ready')!
  const traffic = load(url!, 4)
  await until(() => traffic.stats.byWorker.size === 2, 'both workers answering')
  const bin = fileURLToPath(new URL('../../cli/src/bin.ts', import.meta.url))
  const cli = spawn(process.execPath, ['--conditions=@lameduck/source', bin, 'prestop', '--admin', admin!], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  cli.stdout.on('data', (d: Buffer) => { out += String(d) })
  cli.stderr.on('data', (d: Buffer) => { out += String(d) })
  const [code] = await once(cli, 'exit') as [number]
  await traffic.stop()
  assert.equal(code, 0, out)
  assert.match(out, /offline after/)
  for (const w of [1, 2]) assert.ok(pod.lines.some((l) => l.event === 'state' && l.worker === w && l.to === 'offline'), `worker ${w} offline`)
  assert.equal(traffic.stats.failed, 0, `lost: ${traffic.stats.errors.join(', ')}`)
})

test('node:cluster: SIGTERM to the primary (all kubelet sends) runs every worker\'s offline sequence, then the pod exits 0', async (t) => {
  const pod = spawnPod(['signals'])
  t.after(() => pod.stop())
  await until(() => pod.lines.some((l) => l.event === 'ready'), 'both workers serving', 20_000)
  const { url } = pod.lines.find((l) => l.event === 'ready')!
  const traffic = load(url!, 4)
  await until(() => traffic.stats.byWorker.size === 2, 'both workers answering')
  pod.child.kill('SIGTERM')
  await until(() => [1, 2].every((w) => pod.lines.some((l) => l.event === 'state' && l.worker === w && l.to === 'draining')), 'both workers draining')
  const served = traffic.stats.ok
  await new Promise((resolve) => setTimeout(resolve, 300)) // inside the 800 ms window: consumers may still route here
  await traffic.stop()
  assert.ok(traffic.stats.ok > served, 'served while draining')
  assert.equal(traffic.stats.failed, 0, `lost: ${traffic.stats.errors.join(', ')}`)
  assert.equal(await pod.exited, 0)
  for (const w of [1, 2]) {
    assert.deepEqual(pod.lines.filter((l) => l.event === 'state' && l.worker === w).map((l) => l.to).slice(-4), ['draining', 'offline', 'closing', 'stopped'], `worker ${w}`)
  }
})

test('node:cluster: a worker that has not attached yet gets a bounded 503 in the fan-out, not an admin call that hangs', async (t) => {
  const pod = spawnPod(['late'])
  t.after(() => pod.stop())
  await until(() => pod.lines.some((l) => l.event === 'ready') && pod.lines.some((l) => l.event === 'booting'), 'worker 1 serving, worker 2 booting', 20_000)
  const { admin } = pod.lines.find((l) => l.event === 'ready')!
  const res = await request(`${admin!}/status`)
  const body = await res.body.json() as { state: string, workers: Array<{ worker: number, statusCode: number, error?: string, state: string }> }
  assert.equal(res.statusCode, 200, 'answered (each worker\'s own answer inside)')
  assert.deepEqual(body.workers.map((w) => [w.worker, w.statusCode, w.error ?? w.state]).sort(), [[1, 200, 'serving'], [2, 503, 'worker not answering']])
})

test('node:cluster: a worker that attaches after SIGTERM is told to shut down: it never registers, and the pod exits 0', async (t) => {
  const pod = spawnPod(['late-signals'])
  t.after(() => pod.stop())
  await until(() => pod.lines.some((l) => l.event === 'ready') && pod.lines.some((l) => l.event === 'booting'), 'worker 1 serving, worker 2 booting', 20_000)
  pod.child.kill('SIGTERM')
  await until(() => pod.lines.some((l) => l.event === 'state' && l.worker === 1 && l.to === 'draining'), 'worker 1 draining')
  pod.child.send({ event: 'go' }) // worker 2 finishes booting and attaches now
  assert.equal(await pod.exited, 0)
  const states = pod.lines.filter((l) => l.event === 'state' && l.worker === 2).map((l) => l.to)
  assert.ok(states.includes('closing'), `worker 2 shut down (states: ${states.join(', ')})`)
  assert.ok(!states.includes('serving') && !states.includes('registering'), `worker 2 never registered (states: ${states.join(', ')})`)
})

test('clusterAdmin() checks its options as attach() checks admin, named as written here', async () => {
  const { clusterAdmin } = await import('@lameduck/node')
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ host: '0.0.0.0' }, /^token: required when host is not loopback \('0\.0\.0\.0'\)/],
    [{ host: 'example.com' }, /^host: must be an IP address to bind/],
    [{ port: 70000 }, /^port: must be an integer from 0 to 65535, got number 70000$/],
    [{ token: 'secret-token\n' }, /^token: must be printable ASCII/],
    [{ signals: ['SIGTREM'] }, /^signals: must be an array of signal names/],
    [{ logger: {} }, /^logger: must be a pino-compatible logger/],
    [{ tokn: 'x' }, /^tokn: unknown option \(did you mean 'token'\?\)/]
  ]
  for (const [options, message] of cases) {
    await assert.rejects(clusterAdmin(options as never), (err: Error & { code?: string }) => err.code === 'LAMEDUCK_ERR_INVALID_OPTION' && message.test(err.message), JSON.stringify(options))
  }
})
