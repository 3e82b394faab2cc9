// Real HTTP through the balancer: node:http upstreams on 127.0.0.1, requests via
// undici.request, undici.fetch and Node's built-in fetch.
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { fetch, interceptors, request } from 'undici'
import { createBalancer, staticDiscovery, CONSUMER_HEADER, UnknownServiceError } from '../src/index.ts'
import { closeAfter, upstream } from './helpers.ts'
import type { Upstream } from './helpers.ts'

async function get (dispatcher: import('undici').Dispatcher, url = 'http://orders/'): Promise<string> {
  const res = await request(url, { dispatcher })
  return await res.body.text()
}

async function twoUpstreams (t: TestContext): Promise<[Upstream, Upstream]> {
  return [closeAfter(t, await upstream('a')), closeAfter(t, await upstream('b'))]
}

test('x-lameduck-consumer arrives at the upstream with every request, from request, undici fetch and built-in fetch', async (t) => {
  const a = closeAfter(t, await upstream('a'))
  const balancer = closeAfter(t, createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: [a.address] }) }))
  assert.match(balancer.consumerId, /^\S+-[0-9a-f]{8}$/)
  await get(balancer)
  await (await fetch('http://orders/f', { dispatcher: balancer })).text()
  await (await globalThis.fetch('http://orders/g', { dispatcher: balancer } as RequestInit)).text()
  await (await request('http://orders/h', { dispatcher: balancer, headers: ['x-one', '1'] })).body.text()
  await (await request('http://orders/i', { dispatcher: balancer, headers: new Map([['x-two', '2']]) })).body.text()
  assert.equal(a.requests.length, 5)
  for (const r of a.requests) assert.equal(r.headers[CONSUMER_HEADER], balancer.consumerId, r.url)
  assert.equal(a.requests[3]!.headers['x-one'], '1', 'array headers kept')
  assert.equal(a.requests[4]!.headers['x-two'], '2', 'iterable headers kept')
  await balancer.close()

  const custom = closeAfter(t, createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: [a.address] }), consumerId: 'checkout-7' }))
  await get(custom)
  const headers = { 'X-Lameduck-Consumer': 'set-by-caller' }
  await (await request('http://orders/', { dispatcher: custom, headers })).body.text()
  assert.equal(a.requests[5]!.headers[CONSUMER_HEADER], 'checkout-7')
  assert.equal(a.requests[6]!.headers[CONSUMER_HEADER], 'set-by-caller', "a caller's own value wins")
  assert.deepEqual(headers, { 'X-Lameduck-Consumer': 'set-by-caller' }, "the caller's headers are not mutated")
  await custom.close()
  await a.close()
})

test('a draining response removes that instance from selection at once', async (t) => {
  const [a, b] = await twoUpstreams(t)
  const balancer = closeAfter(t, createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: [a.address, b.address] }) }))
  for (let i = 0; i < 10; i++) await get(balancer)
  assert.equal(a.requests.length, 5)
  assert.equal(b.requests.length, 5)

  a.reply = (_req, res) => { res.setHeader('x-lameduck-state', 'draining'); res.setHeader('connection', 'close'); res.end('a') }
  const before = a.requests.length
  let drainedAfter = 0
  while (a.requests.length === before) { await get(balancer); drainedAfter++ }
  assert.ok(drainedAfter <= 2, 'the next rotation reached a')
  for (let i = 0; i < 50; i++) assert.equal(await get(balancer), 'b')
  assert.equal(a.requests.length, before + 1, 'exactly one request met the draining instance')
  const stats = balancer.stats().services[0]!
  assert.equal(stats.available, 1)
  assert.equal(stats.instances.find((i) => i.address === a.address)!.draining, true)
  await balancer.close()
  await Promise.all([a.close(), b.close()])
})

test('draining: every instance draining falls back to them; a serving response clears; a new registration clears', async (t) => {
  const [a, b] = await twoUpstreams(t)
  const discovery = staticDiscovery({ orders: [a.address, b.address] })
  const balancer = closeAfter(t, createBalancer({ service: 'orders', discovery }))
  const drain = (u: Upstream): void => { u.reply = (_req, res) => { res.setHeader('x-lameduck-state', 'draining'); res.end(u.name) } }
  drain(a)
  drain(b)
  await get(balancer)
  await get(balancer)
  assert.equal(balancer.stats().services[0]!.drainingFallback, true, 'both draining: still served by them')
  assert.match(await get(balancer), /^[ab]$/)

  a.reply = (_req, res) => { res.setHeader('x-lameduck-state', 'serving'); res.end('a') }
  while (balancer.stats().services[0]!.instances.find((i) => i.address === a.address)!.draining) await get(balancer)
  for (let i = 0; i < 10; i++) assert.equal(await get(balancer), 'a', 'a said serving; b is still draining')

  // b registers again (new registeredAt): a new registration is not draining.
  discovery.set('orders', [a.address, { host: '127.0.0.1', port: b.port, metadata: { 'lameduck.registeredAt': String(Date.now()) } }])
  b.reply = (_req, res) => { res.end('b') }
  const seen = new Set<string>()
  for (let i = 0; i < 10; i++) seen.add(await get(balancer))
  assert.deepEqual([...seen].sort(), ['a', 'b'])
  await balancer.close()
  await Promise.all([a.close(), b.close()])
})

test('interceptors compose on top of the balancer', async (t) => {
  const a = closeAfter(t, await upstream('a'))
  a.reply = (_req, res) => { res.statusCode = 503; res.end('busy') }
  const balancer = closeAfter(t, createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: [a.address] }) }))
  const composed = balancer.compose(interceptors.responseError())
  await assert.rejects(request('http://orders/', { dispatcher: composed }), { statusCode: 503 })
  assert.equal(a.requests[0]!.headers[CONSUMER_HEADER], balancer.consumerId)
})

test('drainingFallback: false → the typed error says all draining', async (t) => {
  const a = closeAfter(t, await upstream('a'))
  a.reply = (_req, res) => { res.setHeader('x-lameduck-state', 'draining'); res.end('a') }
  const balancer = closeAfter(t, createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: [a.address] }), drainingFallback: false }))
  assert.equal(await get(balancer), 'a')
  await assert.rejects(get(balancer), { code: 'LAMEDUCK_ERR_NO_INSTANCE', reason: 'all-draining', service: 'orders' })
  await balancer.close()
  await a.close()
})

test('unknown hosts pass through to a normal Agent, or fail with unknownHosts: error', async (t) => {
  const a = closeAfter(t, await upstream('a'))
  const balancer = closeAfter(t, createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: [] }) }))
  assert.equal(await get(balancer, `http://127.0.0.1:${a.port}/direct`), 'a')
  assert.equal(a.requests[0]!.headers[CONSUMER_HEADER], undefined, 'pass-through requests are not tagged')
  await balancer.close()
  const strict = closeAfter(t, createBalancer({ service: 'orders', discovery: staticDiscovery({ orders: [] }), unknownHosts: 'error' }))
  await assert.rejects(get(strict, `http://127.0.0.1:${a.port}/`), (err: unknown) => err instanceof UnknownServiceError && err.host === '127.0.0.1')
  await strict.close()
  await a.close()
})
