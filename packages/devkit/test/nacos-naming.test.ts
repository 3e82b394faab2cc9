// The naming semantics over raw v1 HTTP: parameters, validation, heartbeat
// expiry, beats and data compensation, protect threshold, metrics.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { InvalidOptionError } from '@lameduck/core'
import { startNacos, type ChangeEvent } from '../src/nacos/index.ts'
import { nacosHttp, register, waitFor } from './nacos-helpers.ts'

const beatBody = (port: number, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ serviceName: 'DEFAULT_GROUP@@orders', ip: '127.0.0.1', port, cluster: 'DEFAULT', weight: 3, metadata: { v: '2' }, ...extra })

test('registration reads the query string or a form body, both enable spellings and both metadata forms', async (t) => {
  // The list is the push task's snapshot: pushDelayMs 0 refreshes it at the next 100 ms check.
  const server = await startNacos({ pushDelayMs: 0 })
  t.after(() => server.close())
  await register(server, 'orders', 8080, { enable: false, weight: 2.5, metadata: 'a=1,b=x=y', clusterName: 'c-1' })
  const form = await nacosHttp(server, 'POST', '/instance', { serviceName: 'orders', groupName: 'G', ip: '127.0.0.1', port: 8081, enabled: 'true', metadata: '{"n":1}', namespaceId: 'dev' }, { form: true })
  assert.equal(form.text, 'ok')

  const [a] = server.instances('orders')
  assert.deepEqual({ enabled: a!.enabled, weight: a!.weight, metadata: a!.metadata, clusterName: a!.clusterName }, { enabled: false, weight: 2.5, metadata: { a: '1', b: 'x=y' }, clusterName: 'c-1' })
  const [b] = server.instances('orders', { namespaceId: 'dev', groupName: 'G' })
  assert.deepEqual({ enabled: b!.enabled, metadata: b!.metadata }, { enabled: true, metadata: { n: '1' } })
  assert.equal(server.instances('orders', { namespaceId: 'dev' }).length, 0, 'groups are separate')

  // Disabled instances are not listed; clusters filter.
  assert.equal(server.serviceInfo('orders').hosts.length, 0)
  await register(server, 'orders', 8082, { clusterName: 'c-2' })
  await waitFor('the push task to refresh the snapshot', () => server.serviceInfo('orders').hosts.length === 1)
  assert.deepEqual(server.serviceInfo('orders', { clusters: 'c-1,c-2' }).hosts.map((h) => h.port), [8082])
  assert.deepEqual(server.serviceInfo('orders', { clusters: 'c-1' }).hosts.map((h) => h.port), [])

  // Re-registering the same ip:port:cluster overwrites.
  await register(server, 'orders', 8082, { clusterName: 'c-2', weight: 7 })
  assert.equal(server.instances('orders').filter((i) => i.port === 8082).length, 1)
  assert.equal(server.instances('orders').find((i) => i.port === 8082)!.weight, 7)

  // Admin update and detail.
  assert.equal((await nacosHttp(server, 'PUT', '/instance', { serviceName: 'orders', ip: '127.0.0.1', port: 8080, clusterName: 'c-1', enabled: true })).text, 'ok')
  const detail = await nacosHttp(server, 'GET', '/instance', { serviceName: 'orders', ip: '127.0.0.1', port: 8080, clusterName: 'c-1' })
  assert.equal(detail.json.instanceId, '127.0.0.1#8080#c-1#DEFAULT_GROUP@@orders')
  await waitFor('the enabled instance in the snapshot', () => server.serviceInfo('orders', { clusters: 'c-1' }).hosts.length === 1)
})

test('bad requests get 400 with Nacos-style messages; unknown paths 404, wrong methods 405', async (t) => {
  const server = await startNacos()
  t.after(() => server.close())
  const cases: Array<[Record<string, string | number>, RegExp]> = [
    [{ serviceName: 'orders', port: 1 }, /^caused: Param 'ip' is required\.;$/],
    [{ ip: '127.0.0.1', port: 1 }, /Param 'serviceName' is required/],
    [{ serviceName: 'orders', ip: '127.0.0.1', port: 'x' }, /Param 'port' must be an integer/],
    [{ serviceName: 'orders', ip: '127.0.0.1', port: 1, weight: 10_001 }, /weights range from 0\.0 to 10000\.0/],
    [{ serviceName: 'orders', ip: '127.0.0.1', port: 1, clusterName: 'a_b' }, /clusterName/],
    [{ serviceName: 'orders', ip: '127.0.0.1', port: 1, metadata: '{bad' }, /metadata/],
    [{ serviceName: '@@orders', ip: '127.0.0.1', port: 1 }, /groupName@@serviceName/],
    [{ serviceName: 'orders', ip: '127.0.0.1', port: 1, metadata: '{"preserved.heart.beat.interval":"9000","preserved.heart.beat.timeout":"3000"}' }, /heart beat interval/]
  ]
  for (const [params, message] of cases) {
    const answer = await nacosHttp(server, 'POST', '/instance', params)
    assert.equal(answer.status, 400, JSON.stringify(params))
    assert.match(answer.text, message)
  }
  assert.equal(server.stats().instances, 0)
  assert.equal((await nacosHttp(server, 'GET', '/nope')).status, 404)
  assert.equal((await nacosHttp(server, 'PATCH', '/instance')).status, 405)
})

test('ephemeral instances turn unhealthy, then are deleted, when beats stop; a beat revives an unhealthy one', async (t) => {
  const server = await startNacos({ heartBeatTimeoutMs: 200, ipDeleteTimeoutMs: 600, checkIntervalMs: 50, protectThreshold: false })
  t.after(() => server.close())
  const changes: ChangeEvent[] = []
  server.events.on('change', (c) => changes.push(c))
  const registeredAt = Date.now()
  await register(server, 'orders', 8080)
  await register(server, 'orders', 8081, { ephemeral: false })

  await waitFor('8080 to turn unhealthy', () => server.instances('orders').find((i) => i.port === 8080)?.healthy === false, 2_000)
  const unhealthyMs = Date.now() - registeredAt
  assert.ok(unhealthyMs >= 200, `unhealthy after ${unhealthyMs} ms, not before the 200 ms timeout`)
  assert.deepEqual(server.serviceInfo('orders', { healthyOnly: true }).hosts.map((h) => h.port), [8081])

  // A beat makes it healthy again and restarts the clock.
  const beat = await nacosHttp(server, 'PUT', '/instance/beat', { serviceName: 'orders', beat: beatBody(8080) })
  assert.equal(beat.json.code, 10200)
  assert.equal(server.instances('orders').find((i) => i.port === 8080)?.healthy, true)

  await waitFor('8080 to be deleted', () => server.instances('orders').every((i) => i.port !== 8080), 2_000)
  assert.deepEqual(changes.filter((c) => c.port === 8080).map((c) => c.reason), ['register', 'unhealthy', 'healthy', 'unhealthy', 'expired'])
  assert.equal(server.instances('orders').find((i) => i.port === 8081)?.healthy, true, 'persistent instances are not beat-checked')
})

test('per-instance preserved.* metadata overrides the heartbeat timings', async (t) => {
  const server = await startNacos({ heartBeatTimeoutMs: 60_000, ipDeleteTimeoutMs: 60_000, checkIntervalMs: 50 })
  t.after(() => server.close())
  await register(server, 'orders', 8080, { metadata: JSON.stringify({ 'preserved.heart.beat.interval': '100', 'preserved.heart.beat.timeout': '150', 'preserved.ip.delete.timeout': '300' }) })
  const [host] = server.serviceInfo('orders').hosts
  assert.deepEqual([host!.instanceHeartBeatInterval, host!.instanceHeartBeatTimeOut, host!.ipDeleteTimeout], [100, 150, 300])
  const beat = await nacosHttp(server, 'PUT', '/instance/beat', { serviceName: 'orders', beat: beatBody(8080) })
  assert.equal(beat.json.clientBeatInterval, 100, 'the beat answer carries the instance\'s interval')
  await waitFor('deletion after the preserved timeout', () => server.instances('orders').length === 0, 2_000)
})

test('beats of unknown instances: a full beat re-registers ("data compensation"), a light one gets 20404', async (t) => {
  const compensating = await startNacos()
  const strict = await startNacos({ beatReregister: false })
  t.after(async () => { await compensating.close(); await strict.close() })

  const light = await nacosHttp(compensating, 'PUT', '/instance/beat', { serviceName: 'orders', ip: '127.0.0.1', port: 8080 })
  assert.equal(light.json.code, 20404)
  const full = await nacosHttp(compensating, 'PUT', '/instance/beat', { serviceName: 'DEFAULT_GROUP@@orders', beat: beatBody(8080) })
  assert.equal(full.json.code, 10200)
  const [back] = compensating.instances('orders')
  assert.deepEqual({ port: back!.port, weight: back!.weight, metadata: back!.metadata, healthy: back!.healthy, enabled: back!.enabled }, { port: 8080, weight: 3, metadata: { v: '2' }, healthy: true, enabled: true })

  const refused = await nacosHttp(strict, 'PUT', '/instance/beat', { serviceName: 'DEFAULT_GROUP@@orders', beat: beatBody(8080) })
  assert.equal(refused.json.code, 20404)
  assert.equal(strict.instances('orders').length, 0)
  assert.equal((await nacosHttp(strict, 'PUT', '/instance/beat', { serviceName: 'orders' })).status, 400, 'a beat needs ip and port')
})

test('protect threshold: when too few instances are healthy, all are listed as healthy', async (t) => {
  const server = await startNacos({ heartBeatTimeoutMs: 100, ipDeleteTimeoutMs: 60_000, checkIntervalMs: 30 })
  const off = await startNacos({ heartBeatTimeoutMs: 100, ipDeleteTimeoutMs: 60_000, checkIntervalMs: 30, protectThreshold: false })
  const half = await startNacos({ heartBeatTimeoutMs: 100, ipDeleteTimeoutMs: 60_000, checkIntervalMs: 30, protectThreshold: 0.5 })
  t.after(async () => { await server.close(); await off.close(); await half.close() })
  for (const s of [server, off, half]) await register(s, 'orders', 8080)
  await register(half, 'orders', 8081, { ephemeral: false })
  await waitFor('the instances to turn unhealthy', () => [server, off, half].every((s) => s.instances('orders').find((i) => i.port === 8080)?.healthy === false), 2_000)

  // Default threshold 0: the sole instance is unhealthy (0/1 <= 0), so it is reported healthy.
  const protectedInfo = server.serviceInfo('orders')
  assert.equal(protectedInfo.reachProtectionThreshold, true)
  assert.deepEqual(protectedInfo.hosts.map((h) => h.healthy), [true])
  const offInfo = off.serviceInfo('orders', { healthyOnly: true })
  assert.deepEqual([offInfo.reachProtectionThreshold, offInfo.hosts.length], [false, 0])
  // 1 of 2 healthy = 0.5 <= 0.5.
  assert.equal(half.serviceInfo('orders').reachProtectionThreshold, true)
  assert.equal(half.serviceInfo('orders', { healthyOnly: true }).hosts.length, 2)
})

test('metrics, service list, server list and health endpoints', async (t) => {
  const server = await startNacos()
  t.after(() => server.close())
  await register(server, 'orders', 8080)
  await register(server, 'billing', 8080)
  assert.deepEqual((await nacosHttp(server, 'GET', '/operator/metrics')).json, { status: 'UP' })
  const full = await nacosHttp(server, 'GET', '/operator/metrics', { onlyStatus: false })
  assert.equal(full.json.serviceCount, 2)
  assert.equal(full.json.instanceCount, 2)
  assert.deepEqual((await nacosHttp(server, 'GET', '/service/list', { pageNo: 1, pageSize: 10 })).json, { count: 2, doms: ['billing', 'orders'] })
  const serverList = await fetch(`${server.url}/serverlist`)
  assert.equal(await serverList.text(), `${server.serverList}\r\n`)
  assert.equal(await (await fetch(`${server.url}/v1/console/health/readiness`)).text(), 'OK')
})

test('options are validated with errors that name the option', async () => {
  await assert.rejects(startNacos({ cacheMillis: -1 }), (err: unknown) => err instanceof InvalidOptionError && err.option === 'cacheMillis')
  await assert.rejects(startNacos({ protectThreshold: 2 }), (err: unknown) => err instanceof InvalidOptionError && err.option === 'protectThreshold')
  await assert.rejects(startNacos({ heartBeatTimeoutMs: 10, ipDeleteTimeoutMs: 5 }), (err: unknown) => err instanceof InvalidOptionError && err.option === 'ipDeleteTimeoutMs')
  await assert.rejects(startNacos({ pushTo: 'x' as 'peer' }), (err: unknown) => err instanceof InvalidOptionError && err.option === 'pushTo')
  await assert.rejects(startNacos({ cacheMilis: 5 } as object), (err: unknown) => err instanceof InvalidOptionError && /startNacos\.cacheMilis/.test(err.message))
  await assert.rejects(startNacos({ checkIntervalMs: 0 }), /checkIntervalMs: must be a positive number of milliseconds, got number 0/)
  await assert.rejects(startNacos({ heartBeatTimeoutMs: 2 ** 31 }), /heartBeatTimeoutMs: .* is longer than a timer can wait/)
  await assert.rejects(startNacos({ pushRetries: 1.5 }), /pushRetries: must be a non-negative integer, got number 1\.5/)
  await assert.rejects(startNacos({ logger: { info () {} } as never }), /logger: must be a pino-compatible logger with debug\(\), info\(\), warn\(\), error\(\); its debug\(\) is missing/)
  await assert.rejects(startNacos({ protectThreshold: 2 }), /protectThreshold: must be a number from 0 to 1, or false to turn protection off, got number 2/)
})
