// The `factory` option (as undici BalancedPool's): the balancer builds each
// instance's dispatcher through it, validates it once, and survives a bad one.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Pool, request } from 'undici'
import type { Dispatcher } from 'undici'
import { InvalidOptionError } from '@lameduck/core'
import { createBalancer, staticDiscovery } from '../src/index.ts'
import { closeAfter, upstream } from './helpers.ts'

test('a custom factory builds every instance dispatcher, once per instance, with the resolved poolOptions', async (t) => {
  const a = closeAfter(t, await upstream('a'))
  const b = closeAfter(t, await upstream('b'))
  const built: Array<{ origin: string, connections: unknown }> = []
  let through = 0
  const balancer = closeAfter(t, createBalancer({
    service: 'orders',
    discovery: staticDiscovery({ orders: [a.address, b.address] }),
    refreshIntervalMs: 0,
    poolOptions: { connections: 4 },
    factory: (origin, opts) => {
      built.push({ origin, connections: opts.connections })
      // An interceptor proves requests go through what the factory returned.
      return new Pool(origin, opts).compose((dispatch) => (o: Dispatcher.DispatchOptions, h: Dispatcher.DispatchHandler) => { through++; return dispatch(o, h) })
    }
  }))
  const bodies = []
  for (let i = 0; i < 6; i++) bodies.push(await (await request('http://orders/', { dispatcher: balancer })).body.text())
  assert.deepEqual(bodies.sort(), ['a', 'a', 'a', 'b', 'b', 'b'])
  assert.deepEqual(built.map((x) => x.origin).sort(), [`http://${a.address}`, `http://${b.address}`].sort())
  assert.ok(built.every((x) => x.connections === 4))
  assert.equal(through, 6)
})

test('factory is validated once: not a function → InvalidOptionError naming it', () => {
  for (const factory of ['pool', 42, {}, true]) {
    assert.throws(() => createBalancer({ service: 'orders', discovery: staticDiscovery(), factory: factory as never }),
      (err: unknown) => err instanceof InvalidOptionError && /factory/.test(err.message) && /\(origin, opts\) => Dispatcher/.test(err.message))
  }
})

test('a factory that returns no dispatcher: the request fails with a typed error naming the factory, nothing thrown', async (t) => {
  const a = closeAfter(t, await upstream('a'))
  const balancer = closeAfter(t, createBalancer({
    service: 'orders', discovery: staticDiscovery({ orders: [a.address] }), refreshIntervalMs: 0, factory: () => ({}) as Dispatcher
  }))
  await assert.rejects(request('http://orders/', { dispatcher: balancer }), (err: Error) => {
    assert.equal((err as { code?: string }).code, 'LAMEDUCK_ERR_NO_INSTANCE')
    assert.match(String((err.cause as Error).message), /factory.*must return an undici Dispatcher/)
    return true
  })
})
