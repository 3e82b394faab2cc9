// Every dispatch ends in exactly one terminal callback (onResponseEnd,
// onResponseError or onRequestUpgrade), and an AbortSignal ends it whatever the
// balancer is doing at that moment: between attempts, while the next instance is
// still connecting, or while the response streams.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Pool, errors, request } from 'undici'
import type { Dispatcher } from 'undici'
import type { Discovery, Instance } from '@lameduck/core'
import { createBalancer } from '../src/index.ts'
import type { Balancer } from '../src/index.ts'
import { closeAfter, closedPort, upstream } from './helpers.ts'

const at = (id: string, port: number, weight: number): Instance =>
  ({ id, service: 'orders', host: '127.0.0.1', port, status: 'UP', metadata: { 'lameduck.weight': String(weight) } })

const listing = (list: Instance[]): Discovery => ({ instances: () => list, subscribe: () => () => {} })

/** A dispatcher that takes requests and never answers (a connect that hangs), through the `factory` option. */
function stuck (onDispatch: (handler: Dispatcher.DispatchHandler) => void): Dispatcher {
  return {
    dispatch: (_opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) => { onDispatch(handler); return true },
    close: async () => {},
    destroy: async () => {},
    on: () => {}
  } as unknown as Dispatcher
}

/** A balancer over a dead instance (picked first) and a stuck one reached by the failover. */
async function deadThenStuck (onStuck: (handler: Dispatcher.DispatchHandler) => void): Promise<Balancer> {
  const dead = await closedPort()
  const stuckPort = 1
  return createBalancer({
    service: 'orders',
    discovery: listing([at('dead', dead, 1_000), at('stuck', stuckPort, 1)]),
    refreshIntervalMs: 0,
    ejectAfter: 1_000,
    factory: (origin, opts) => origin.endsWith(`:${stuckPort}`) ? stuck(onStuck) : new Pool(origin, opts)
  })
}

const TERMINAL = new Set(['onResponseEnd', 'onResponseError', 'onRequestUpgrade'])

/** A v2 handler that records its callbacks; `react` may act on the controller. */
function recorder (react: (event: string, controller: Dispatcher.DispatchController) => void = () => {}) {
  const events: string[] = []
  let settle!: () => void
  const settled = new Promise<void>((resolve) => { settle = resolve })
  const on = (name: string) => (controller: Dispatcher.DispatchController) => {
    events.push(name)
    react(name, controller)
    if (TERMINAL.has(name)) settle()
  }
  const handler: Dispatcher.DispatchHandler = {
    onRequestStart: on('onRequestStart'),
    onResponseStart: on('onResponseStart'),
    onResponseData: on('onResponseData'),
    onResponseEnd: on('onResponseEnd'),
    onResponseError: (controller, err) => { on('onResponseError')(controller!); failures.push(err) },
    onRequestUpgrade: on('onRequestUpgrade')
  }
  const failures: Error[] = []
  return { handler, events, errors: failures, settled, terminals: () => events.filter((e) => TERMINAL.has(e)).length }
}

test('abort while the failover waits on a connecting instance: rejects with AbortError at once', { timeout: 30_000 }, async (t) => {
  const ac = new AbortController()
  let reached = 0
  const balancer = closeAfter(t, await deadThenStuck(() => { reached++; setImmediate(() => ac.abort()) }))
  await assert.rejects(request('http://orders/', { dispatcher: balancer, signal: ac.signal }), { name: 'AbortError' })
  assert.equal(reached, 1, 'the dead instance failed, the failover reached the stuck one, then the abort ended the request')
})

test('abort between attempts (in the failed connect\'s error path): rejects with AbortError, no further attempt', { timeout: 30_000 }, async (t) => {
  const ac = new AbortController()
  let reached = 0
  const dead = await closedPort()
  const live = closeAfter(t, await upstream('live'))
  const logger = { debug () {}, info () {}, error () {}, warn (_o: unknown, msg?: string) { if (msg?.includes('instance ejected') === true) ac.abort() } }
  const balancer = closeAfter(t, createBalancer({
    service: 'orders',
    discovery: listing([at('dead', dead, 1_000), at('live', live.port, 1)]),
    refreshIntervalMs: 0,
    logger,
    factory: (origin, opts) => { if (origin.endsWith(`:${live.port}`)) reached++; return new Pool(origin, opts) }
  }))
  await assert.rejects(request('http://orders/', { dispatcher: balancer, signal: ac.signal }), { name: 'AbortError' })
  assert.equal(reached, 0)
  assert.equal(live.requests.length, 0)
})

test('exactly one terminal callback: success, all dead, abort mid-failover (late callbacks ignored), abort mid-response, already aborted, a throwing handler', { timeout: 30_000 }, async (t) => {
  const live = closeAfter(t, await upstream('live'))
  live.reply = (_req, res) => { res.write('part'); setImmediate(() => res.end('rest')) }
  const okBalancer = closeAfter(t, createBalancer({ service: 'orders', discovery: listing([at('live', live.port, 1)]), refreshIntervalMs: 0 }))
  const deadBalancer = closeAfter(t, createBalancer({ service: 'orders', discovery: listing([at('d1', await closedPort(), 1), at('d2', await closedPort(), 1)]), refreshIntervalMs: 0 }))
  let late: Dispatcher.DispatchHandler | undefined
  const stuckBalancer = closeAfter(t, await deadThenStuck((h) => { late = h }))
  const opts: Dispatcher.DispatchOptions = { origin: 'http://orders', path: '/', method: 'GET' }

  const ok = recorder()
  okBalancer.dispatch(opts, ok.handler)
  await ok.settled
  assert.equal(ok.events.at(-1), 'onResponseEnd')

  const allDead = recorder()
  deadBalancer.dispatch(opts, allDead.handler)
  await allDead.settled
  assert.equal(allDead.errors[0]?.name, 'NoInstanceError')

  let callerController: Dispatcher.DispatchController | undefined
  const midFailover = recorder((event, c) => { if (event === 'onRequestStart') callerController = c })
  stuckBalancer.dispatch(opts, midFailover.handler)
  const reachedStuck = (): boolean => late !== undefined
  while (!reachedStuck()) await new Promise((resolve) => setImmediate(resolve))
  callerController!.abort(new errors.RequestAbortedError())
  await midFailover.settled
  assert.equal(midFailover.errors[0]?.name, 'AbortError')
  // The stuck attempt wakes up later: it is aborted as it starts, and its error goes nowhere.
  let lateAbort: Error | undefined
  const lateController = { abort: (reason: Error) => { lateAbort = reason }, pause () {}, resume () {}, aborted: false, paused: false, reason: null } as unknown as Dispatcher.DispatchController
  late!.onRequestStart?.(lateController, null)
  late!.onResponseError?.(lateController, new Error('late'))
  assert.equal(lateAbort?.name, 'AbortError')

  const midResponse = recorder((event, c) => { if (event === 'onResponseData') c.abort(new Error('enough')) })
  okBalancer.dispatch(opts, midResponse.handler)
  await midResponse.settled
  assert.equal(midResponse.errors[0]?.message, 'enough')

  const served = live.requests.length
  const early = recorder((event, c) => { if (event === 'onRequestStart') c.abort(new errors.RequestAbortedError()) })
  okBalancer.dispatch(opts, early.handler)
  await early.settled
  assert.deepEqual(early.events, ['onRequestStart', 'onResponseError'])

  const throwing = recorder((event) => { if (event === 'onRequestStart') throw new Error('handler bug') })
  okBalancer.dispatch(opts, throwing.handler)
  await throwing.settled
  assert.equal(throwing.errors[0]?.message, 'handler bug')

  await Promise.all([okBalancer.close(), deadBalancer.close(), stuckBalancer.close()])
  assert.equal(live.requests.length, served, 'an aborted request is not sent')
  for (const r of [ok, allDead, midFailover, midResponse, early, throwing]) assert.equal(r.terminals(), 1, r.events.join(','))
})
