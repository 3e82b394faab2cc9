import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  ADMIN_ROUTES, DEFAULT_ADMIN_PORT, DEFAULT_ADMIN_URL, DRAIN_PHASES, DRAIN_PHASE_INFO, LEAVING_STATES, STATES, STATE_CLASSES, STOPPING_STATES,
  buildStatus, createLifecycle, isLeaving, isRegistered, isStopping, stateClass, virtualClock
} from '@lameduck/core'

test('one table answers the state questions; the sets and predicates agree with it', () => {
  assert.deepEqual(Object.keys(STATE_CLASSES), [...STATES])
  assert.deepEqual([...LEAVING_STATES], ['draining', 'offline', 'closing', 'stopped'])
  assert.deepEqual([...STOPPING_STATES], ['offline', 'closing', 'stopped'])
  assert.deepEqual(STATES.filter(isRegistered), ['registering', 'serving', 'draining'])
  assert.deepEqual(STATES.filter(isLeaving), [...LEAVING_STATES])
  assert.deepEqual(STATES.filter(isStopping), [...STOPPING_STATES])
  assert.equal(stateClass('toString'), undefined, 'strings from the wire are looked up safely')
  assert.equal(isLeaving('DRAINING'), false)
})

test('every drain phase is described; the admin constants', () => {
  assert.deepEqual(Object.keys(DRAIN_PHASE_INFO), [...DRAIN_PHASES])
  assert.deepEqual(DRAIN_PHASES.filter((p) => DRAIN_PHASE_INFO[p].countdown), ['window'])
  assert.equal(DEFAULT_ADMIN_PORT, 54199)
  assert.equal(DEFAULT_ADMIN_URL, 'http://127.0.0.1:54199')
  assert.deepEqual(ADMIN_ROUTES, { offline: '/offline', online: '/online', status: '/status', metrics: '/metrics' })
})

test('buildStatus: the lifecycle part plus the listener part, absent extras as null', async () => {
  const clock = virtualClock()
  const lifecycle = createLifecycle({ clock })
  const bare = buildStatus(lifecycle)
  assert.equal(bare.state, 'starting')
  assert.equal(bare.deregistration, null)
  assert.deepEqual([bare.connections, bare.earlyOffline, bare.broken, bare.shutdownTimeoutMs, bare.adminUrl], [null, null, null, null, null])
  const full = buildStatus(lifecycle, { connections: { open: 2, closedWhileDraining: 0 }, adminUrl: 'http://127.0.0.1:1', shutdownTimeoutMs: 45_000 })
  assert.deepEqual(full.connections, { open: 2, closedWhileDraining: 0 })
  assert.equal(full.adminUrl, 'http://127.0.0.1:1')
  assert.equal(full.shutdownTimeoutMs, 45_000)
  const asRecord: Record<string, unknown> = full // still assignable where Record<string, unknown> was expected
  assert.ok(asRecord)
})
