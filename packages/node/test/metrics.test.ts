import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import { Registry } from 'prom-client'
import { request } from 'undici'
import { silentLogger } from '@lameduck/core'
import { attach } from '@lameduck/node'
import { appHandler, startServer, stop, until } from './helpers.ts'

interface Family { name: string, help: string, type: string, metrics: Array<{ value: string, labels?: Record<string, string> }> }
// A real exposition-format parser (not a regex of ours); it has no types, hence require.
const parse = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => Family[]

const TOKEN = 's3cret-admin-token'

test('metrics.listener app: /metrics on the app port without a token, and nothing else of the admin there', async (t) => {
  const s = await startServer({ metrics: { listener: 'app' }, admin: { port: 0, token: TOKEN }, windows: { clientFetchMs: 100 } })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  const res = await request(`${s.url}/metrics`)
  assert.equal(res.statusCode, 200)
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/)
  const families = parse(await res.body.text())
  const state = families.find((f) => f.name === 'lameduck_state')!
  assert.equal(state.metrics.find((m) => m.labels?.state === 'serving')?.value, '1')
  for (const path of ['/offline', '/online', '/status', '/offline?wait=true']) {
    for (const method of ['GET', 'POST'] as const) {
      const r = await request(`${s.url}${path}`, { method })
      assert.equal(r.statusCode, 404, `${method} ${path} on the app port reaches the app, not the admin`)
      await r.body.dump()
    }
  }
  assert.equal(s.lameduck.state, 'serving')
  assert.ok(!s.seen.includes('/metrics'), 'the scrape is answered before the app')
  assert.equal((await request(`${s.admin}/metrics`)).statusCode, 401, 'the admin copy still wants the token')
  assert.equal((await request(`${s.url}/metrics`, { method: 'POST' })).statusCode, 404, 'read-only: POST goes to the app')
})

test('metric names follow Prometheus conventions, checked with a real exposition parser, after a drain', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 100 } })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  await (await request(`${s.url}/hello`)).body.dump()
  await s.lameduck.offline()
  const families = parse(await (await request(`${s.admin}/metrics`)).body.text())
  const names = families.map((f) => f.name)
  for (const name of ['lameduck_state', 'lameduck_requests_total', 'lameduck_connections_closed_while_draining_total', 'lameduck_window_seconds', 'lameduck_drain_duration_seconds', 'lameduck_offline_total', 'lameduck_drains_cut_total', 'lameduck_deregistrations_unconfirmed_total']) {
    assert.ok(names.includes(name), `${name} in ${names.join(', ')}`)
  }
  for (const f of families) {
    assert.match(f.name, /^lameduck_[a-z_]+$/)
    assert.ok(f.help.length > 0, `${f.name} has help`)
    if (f.type === 'COUNTER') assert.match(f.name, /_total$/, `counter ${f.name} ends in _total`)
    else assert.doesNotMatch(f.name, /_total$/, `${f.type} ${f.name} does not end in _total`)
    if (/duration|window|max_request/.test(f.name)) assert.match(f.name, /_seconds$/, `${f.name} is in seconds`)
  }
  const value = (name: string, labels: Record<string, string> = {}) => Number(families.find((f) => f.name === name)!.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))!.value)
  assert.equal(value('lameduck_offline_total', { outcome: 'offline' }), 1)
  assert.equal(value('lameduck_window_seconds'), 0.1)
  assert.ok(value('lameduck_drain_duration_seconds') >= 0.1)
  assert.equal(value('lameduck_state', { state: 'offline' }), 1)
})

test('metrics.registry: lameduck\'s metrics in a user\'s prom-client Registry, read at scrape time; a second registration fails clean; close() removes them', async (t) => {
  const registry = new Registry()
  registry.setDefaultLabels({ app: 'orders' })
  const s = await startServer({ metrics: { registry }, windows: { clientFetchMs: 100 } })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  const json = await registry.getMetricsAsJSON()
  const state = json.find((m) => m.name === 'lameduck_state')!
  assert.equal(state.type, 'gauge')
  assert.equal(state.values.find((v) => v.labels.state === 'serving')?.value, 1)
  await s.lameduck.offline()
  const text = await registry.metrics()
  const families = parse(text)
  assert.equal(families.find((f) => f.name === 'lameduck_offline_total')!.metrics.find((m) => m.labels?.outcome === 'offline')?.value, '1')
  assert.equal(families.find((f) => f.name === 'lameduck_state')!.metrics.find((m) => m.labels?.state === 'offline')?.labels?.app, 'orders', 'the registry\'s default labels apply')
  const listeners = process.listenerCount('SIGTERM')
  const server = createServer(appHandler())
  await assert.rejects(attach(server, { service: 'x', signals: ['SIGTERM'], admin: { port: 0 }, metrics: { registry }, logger: silentLogger }),
    (err: Error & { code?: string }) => err.code === 'LAMEDUCK_ERR_INVALID_OPTION' && /^metrics\.registry: already has a metric named lameduck_state/.test(err.message))
  assert.equal(process.listenerCount('SIGTERM'), listeners, 'no signal handler left behind')
  await s.lameduck.close()
  assert.equal(registry.getSingleMetric('lameduck_state'), undefined, 'removed on close')
})

test('invalid metrics options name the option', async () => {
  const server = createServer()
  const cases: Array<[unknown, RegExp]> = [
    ['yes', /^metrics: must be an object/],
    [{ listener: 'public' }, /^metrics\.listener: must be one of 'app', 'admin', false; got 'public'$/],
    [{ path: 'metrics' }, /^metrics\.path: must be a path starting with '\/'/],
    [{ listener: 'app', path: '/health/ready' }, /^metrics\.path: '\/health\/ready' is already a probe route/],
    [{ registry: {} }, /^metrics\.registry: must be a prom-client Registry/]
  ]
  for (const [metrics, message] of cases) {
    await assert.rejects(attach(server, { service: 'x', signals: false, admin: false, metrics } as never), (err: Error & { code?: string }) => err.code === 'LAMEDUCK_ERR_INVALID_OPTION' && message.test(err.message), JSON.stringify(metrics))
  }
  await assert.rejects(attach(server, { service: 'x', signals: false, admin: false, metrics: { listener: 'admin' } }), /metrics\.listener: 'admin' needs the admin listener/)
})

test('lameduck_drains_cut_total counts a drain that reached maxRequestMs with a request in flight', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 100 }, maxRequestMs: 200, shutdownTimeoutMs: 5_000 })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  const slow = request(`${s.url}/slow?ms=1500`).catch(() => null)
  await until(() => s.lameduck.lifecycle.inflight.count === 1, 'in flight')
  const report = await s.lameduck.offline()
  assert.equal(report.inflightAtEnd, 1)
  const families = parse(s.lameduck.metrics())
  const value = (name: string) => families.find((f) => f.name === name)!.metrics[0]!.value
  assert.equal(value('lameduck_drains_cut_total'), '1')
  assert.equal(value('lameduck_inflight_requests'), '1')
  await slow
})

test('lameduck_offline_duration_seconds: a histogram by outcome, cumulative buckets, in the text exposition and in a prom-client registry', async (t) => {
  const registry = new Registry()
  const s = await startServer({ metrics: { registry }, windows: { clientFetchMs: 600 } })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  const first = await s.lameduck.offline()
  await s.lameduck.online()
  const second = await s.lameduck.offline()
  const text = await (await request(`${s.admin}/metrics`)).body.text()
  assert.equal(parse(text).find((f) => f.name === 'lameduck_offline_duration_seconds')?.type, 'HISTOGRAM', 'a histogram family to a real exposition parser')
  // The parser keeps no labels for histograms: the samples are read here.
  const sample = (suffix: string, labels: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`lameduck_offline_duration_seconds_${suffix}{${labels}} `))
    assert.ok(line !== undefined, `${suffix}{${labels}} in:\n${text}`)
    return Number(line.split(' ')[1])
  }
  assert.equal(sample('count', 'outcome="offline"'), 2)
  assert.ok(Math.abs(sample('sum', 'outcome="offline"') - (first.totalMs + second.totalMs) / 1000) < 1e-9)
  const below = (le: number): number => [first, second].filter((r) => r.totalMs / 1000 <= le).length
  for (const le of [0.5, 1, 2.5, 5, 300]) assert.equal(sample('bucket', `outcome="offline",le="${le}"`), below(le), `le=${le}`)
  assert.equal(sample('bucket', 'outcome="offline",le="+Inf"'), 2)
  assert.equal(sample('bucket', 'outcome="offline",le="0.5"'), 0, 'both drains took longer than the 0.6 s window')
  const fromClient = (await registry.getMetricsAsJSON()).find((m) => m.name === 'lameduck_offline_duration_seconds')!
  assert.equal(fromClient.type, 'histogram')
  assert.equal(fromClient.values.find((v) => (v as { metricName?: string }).metricName === 'lameduck_offline_duration_seconds_count' && v.labels.outcome === 'offline')?.value, 2)
})
