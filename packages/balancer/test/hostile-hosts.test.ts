// Hosts a registry hands over are data from other machines: a port in the host, a
// zone id, a space or userinfo must not reach `new Pool()`. Such instances never
// enter the table (one warning each), and every path from pick to pool creation
// ends the request in a response or an error, never in an uncaught throw or a hang.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import type { Discovery, Instance } from '@lameduck/core'
import { createBalancer } from '../src/index.ts'
import { hostPort, hostProblem } from '../src/address.ts'
import { closeAfter, closedPort, recordingLogger, upstream } from './helpers.ts'

const HOSTILE = ['10.0.0.5:8080', 'fe80::1%eth0', '[fe80::1%25eth0]', 'my host', 'evil.com:80@127.0.0.1', 'a/b', 'x?y', 'h#f', '10.0.0.256', '1.2.3', '0x7f', '-lead.example', 'trail-.example', 'a..b', '[::1', '::1]', `${'a'.repeat(64)}.example`, 'ü.example', 'a\nb', '']

/** A Discovery that lists exactly what it is given (as a registry would), nothing checked. */
function listing (list: unknown[]): Discovery {
  return { instances: () => list as Instance[], subscribe: () => () => {} }
}

const at = (id: string, host: string, port: number, weight = 100): Instance =>
  ({ id, service: 'orders', host, port, status: 'UP', metadata: { 'lameduck.weight': String(weight) } })

/** Records uncaught exceptions for the test's duration (as an app's process-level logger would). */
function catchUncaught (t: { after: (fn: () => void) => void }): unknown[] {
  const caught: unknown[] = []
  const onError = (err: unknown): void => { caught.push(err) }
  process.on('uncaughtException', onError)
  t.after(() => { process.off('uncaughtException', onError) })
  return caught
}

test('hostPort brackets IPv6 literals only, not anything with a colon in it', () => {
  assert.equal(hostPort('::1', 80), '[::1]:80')
  assert.equal(hostPort('fe80::1', 80), '[fe80::1]:80')
  assert.equal(hostPort('10.0.0.5', 80), '10.0.0.5:80')
  assert.equal(hostPort('10.0.0.5:8080', 80), '10.0.0.5:8080:80', 'not bracketed (and never routed: hostProblem rejects it)')
  assert.equal(hostPort('evil.com:80@127.0.0.1', 80), 'evil.com:80@127.0.0.1:80')
})

test('hostProblem accepts IPv4, IPv6 (bare or bracketed, no zone id) and DNS names; rejects the rest', () => {
  for (const ok of ['127.0.0.1', '10.0.0.5', '::1', '[::1]', 'fe80::1', '2001:db8::8a2e:370:7334', '::ffff:10.0.0.1', 'localhost', 'orders.svc.cluster.local', 'orders.svc.cluster.local.', 'xn--nxasmq6b.example', 'my_host', 'a1', '1a.example', `${'a'.repeat(63)}.example`]) {
    assert.equal(hostProblem(ok), null, ok)
  }
  for (const bad of [...HOSTILE, 42, null, undefined, 'a'.repeat(256)]) assert.notEqual(hostProblem(bad), null, String(bad))
})

test('instances with a malformed host are skipped, logged once each (not per refresh); a failover next to them serves everything', async (t) => {
  const caught = catchUncaught(t)
  const live = closeAfter(t, await upstream('live'))
  const dead = await closedPort()
  // The dead instance is picked first; the hostile ones outweigh the live one, so
  // the failover pick would land on them if they were in the table.
  const list = [at('dead', '127.0.0.1', dead, 10_000), ...HOSTILE.slice(0, 5).map((h, i) => at(`bad-${i}`, h, 8080, 1_000)), at('live', '127.0.0.1', live.port, 1)]
  const { logger, warnings } = recordingLogger()
  const balancer = closeAfter(t, createBalancer({ service: 'orders', discovery: listing(list), logger, ejectAfter: 1_000, refreshIntervalMs: 0 }))
  for (let i = 0; i < 5; i++) {
    const res = await request('http://orders/', { dispatcher: balancer, method: 'POST', body: `p${i}` })
    assert.equal(await res.body.text(), 'live')
  }
  balancer.refresh()
  balancer.refresh()
  assert.deepEqual(balancer.stats().services[0]!.instances.map((i) => i.id), ['dead', 'live'])
  const skipped = warnings.filter((w) => /skipping an instance of 'orders' with an unusable address/.test(w.msg ?? ''))
  assert.deepEqual(skipped.map((w) => w.obj.host), HOSTILE.slice(0, 5), 'one warning per instance, across three refreshes')
  assert.equal(live.requests.length, 5)
  assert.deepEqual(caught, [])
})

test('a factory that throws: the instance is ejected like a failed connect and the request goes elsewhere', async (t) => {
  const caught = catchUncaught(t)
  const live = closeAfter(t, await upstream('live'))
  const list = [at('broken', '127.0.0.1', 1, 1_000), at('live', '127.0.0.1', live.port, 1)]
  const { Pool } = await import('undici')
  const balancer = closeAfter(t, createBalancer({
    service: 'orders',
    discovery: listing(list),
    refreshIntervalMs: 0,
    factory: (origin, opts) => { if (origin.endsWith(':1')) throw new TypeError('Invalid URL'); return new Pool(origin, opts) }
  }))
  for (let i = 0; i < 3; i++) assert.equal(await (await request('http://orders/', { dispatcher: balancer })).body.text(), 'live')
  const broken = balancer.stats().services[0]!.instances.find((i) => i.id === 'broken')!
  assert.deepEqual([broken.connectFailures, broken.ejected], [1, true])
  assert.deepEqual(caught, [])
})
