// Property test of the consumer against hostile instance addresses. Each case
// lists, through a Discovery, a dead instance (picked first, so every request
// fails over), a live one and a few instances with generated hosts and ports:
// ports and userinfo in the host, zone ids, brackets, spaces, control characters,
// numbers a URL parser reads as IPv4, long labels. With a process-level
// uncaughtException handler installed (as apps have), after every case:
// - nothing was thrown uncaught,
// - every request settled (a response or an error; aborted ones with AbortError),
// - every address the balancer accepted makes a valid pool origin (the factory
//   builds a real undici Pool for it), and a request that succeeded was served live.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Pool, request } from 'undici'
import type { Discovery, Instance } from '@lameduck/core'
import { createBalancer } from '@lameduck/balancer'
import { deadPort as refusingPort } from '@lameduck/test-utils'
import { forAllAsync, seedFromEnv, type Random } from './prng.ts'

const PARTS = ['10.0.0.5', 'fe80::1', '::1', '[::1]', 'evil.com', 'orders', 'a', '127.0.0.1', 'xn--p1ai', '0x7f', '1e3', '256', '0', '-', '_', 'ü', '😀']
const GLUE = [':', '%', '%25', 'eth0', '@', ' ', '/', '.', '..', '[', ']', '#', '?', '\\', '\n', '\t', '\u0000', ':8080', '@127.0.0.1', '']

function hostileHost (r: Random): unknown {
  switch (r.int(0, 5)) {
    case 0: return r.nasty(30)
    case 1: return r.pick([42, null, undefined, {}, ['a'], true, ''])
    case 2: return 'a'.repeat(r.int(60, 70)) + r.pick(['', '.example'])
    default: {
      let host = ''
      for (let n = r.int(1, 4); n > 0; n--) host += r.pick(PARTS) + (r.bool(0.6) ? r.pick(GLUE) : '')
      return host
    }
  }
}

const hostilePort = (r: Random): unknown => r.bool(0.7) ? r.int(1, 65_535) : r.pick([0, -1, 65_536, 80.5, '8080', Number.NaN, null, r.number()])

interface Case { hosts: Array<{ host: unknown, port: unknown }>, abortAfterTurns: number }

test('hostile hosts from discovery: nothing thrown uncaught, every request settles, only valid origins reach a pool', { timeout: 120_000 }, async (t) => {
  const caught: unknown[] = []
  const onUncaught = (err: unknown): void => { caught.push(err) }
  process.on('uncaughtException', onUncaught)
  t.after(() => { process.off('uncaughtException', onUncaught) })

  const server = createServer((req, res) => { req.resume(); req.on('end', () => res.end('live')) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  const livePort = (server.address() as AddressInfo).port
  const dead = await refusingPort()
  t.after(dead.close)
  const deadPort = dead.port

  let list: unknown[] = []
  const discovery: Discovery = { instances: () => list as Instance[], subscribe: () => () => {} }
  const origins: string[] = []
  const badOrigins: string[] = []
  const balancer = createBalancer({
    service: 'orders',
    discovery,
    refreshIntervalMs: 0,
    ejectAfter: 1_000_000,
    maxConnectRetries: 10,
    // A real Pool for every accepted address proves it is a valid origin; all but the
    // live one then point at the dead port (no DNS, no traffic off the machine).
    factory: (origin, opts) => {
      origins.push(origin)
      try { new Pool(origin, opts).destroy().catch(() => {}) } catch { badOrigins.push(origin) }
      return new Pool(origin === `http://127.0.0.1:${livePort}` ? origin : `http://127.0.0.1:${deadPort}`, opts)
    }
  })
  t.after(() => balancer.close())

  const seed = seedFromEnv(0x5eed_1312)
  await forAllAsync('hostile hosts', seed, 150, (r): Case => ({
    hosts: r.array(1, 4, () => ({ host: hostileHost(r), port: hostilePort(r) })),
    abortAfterTurns: r.int(0, 6)
  }), async ({ hosts, abortAfterTurns }, i) => {
    list = [
      { id: 'dead', service: 'orders', host: '127.0.0.1', port: deadPort, status: 'UP', metadata: { 'lameduck.weight': '100000' } },
      ...hosts.map((h, k) => ({ id: `h${i}-${k}`, service: 'orders', ...h, status: 'UP', metadata: { 'lameduck.weight': '1000' } })),
      { id: 'live', service: 'orders', host: '127.0.0.1', port: livePort, status: 'UP', metadata: {} }
    ]
    balancer.refresh()
    const ac = new AbortController()
    const settled = await Promise.allSettled([
      request('http://orders/', { dispatcher: balancer }).then((res) => res.body.text()),
      request('http://orders/', { dispatcher: balancer, method: 'POST', body: `case-${i}` }).then((res) => res.body.text()),
      request('http://orders/', { dispatcher: balancer, signal: ac.signal }).then((res) => res.body.text()),
      (async () => { for (let n = 0; n < abortAfterTurns; n++) await new Promise((resolve) => setImmediate(resolve)); ac.abort() })()
    ])
    for (const [k, s] of settled.slice(0, 3).entries()) {
      if (s.status === 'fulfilled') assert.equal(s.value, 'live', `request ${k} served live`)
      else assert.ok(typeof (s.reason as { code?: unknown }).code === 'string' || (s.reason as Error).name === 'AbortError', `request ${k}: ${String(s.reason)}`)
    }
    assert.deepEqual(caught.map(String), [], 'nothing thrown uncaught')
    assert.deepEqual(badOrigins, [], 'every accepted address makes a valid origin')
  })
  assert.ok(origins.length > 2, 'some generated addresses were valid and reached the factory')
})
