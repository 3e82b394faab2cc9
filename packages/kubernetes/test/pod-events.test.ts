import { test } from 'node:test'
import assert from 'node:assert/strict'
import { InvalidOptionError, type OfflineReport } from '@lameduck/core'
import { podEvents, reportEvents } from '@lameduck/kubernetes'

const report = (over: Partial<OfflineReport> = {}): OfflineReport => ({
  outcome: 'offline',
  reason: 'SIGTERM',
  startedAt: 0,
  deregisteredAt: 10,
  deregistration: { state: 'confirmed', attempts: 1, lastError: null, confirmedAt: 10 },
  windowMs: 30_000,
  windowEndedAt: 30_010,
  endedEarly: false,
  windowTerms: [],
  sidecarMs: 0,
  inflightWaitMs: 5,
  endedAt: 30_015,
  totalMs: 30_015,
  requestsWhileDraining: 12,
  inflightAtEnd: 0,
  problems: [],
  ...over
}) as OfflineReport

test('reportEvents: Drained, DrainCut, DeregistrationUnconfirmed, OfflineCancelled from the report', () => {
  assert.deepEqual(reportEvents(report()).map((e) => `${e.type} ${e.reason}`), ['Normal Drained'])
  assert.match(reportEvents(report())[0]!.message, /^offline in 30\.0 s \(SIGTERM\): window 30\.0 s, sidecar 0\.0 s, in-flight wait 0\.0 s, 12 request\(s\) served while draining$/)
  assert.deepEqual(reportEvents(report({ inflightAtEnd: 2 })).map((e) => `${e.type} ${e.reason}`), ['Warning DrainCut'])
  assert.deepEqual(reportEvents(report({ outcome: 'cut', inflightAtEnd: 1 })).map((e) => `${e.type} ${e.reason}`), ['Warning DrainCut'])
  assert.deepEqual(reportEvents(report({ deregistration: { state: 'unconfirmed', attempts: 4, lastError: 'ECONNREFUSED', confirmedAt: null } })).map((e) => `${e.type} ${e.reason}`), ['Warning DeregistrationUnconfirmed', 'Normal Drained'])
  assert.deepEqual(reportEvents(report({ outcome: 'cancelled' })).map((e) => `${e.type} ${e.reason}`), ['Normal OfflineCancelled'])
  assert.deepEqual(reportEvents(report({ outcome: 'skipped' })), [])
})

test('podEvents checks its options at the edge; without a cluster it is off, with one warning', async () => {
  assert.throws(() => podEvents({ nameSpace: 'x' } as never), (err: Error) => err instanceof InvalidOptionError && /nameSpace.*known options are pod, namespace/.test(err.message))
  assert.throws(() => podEvents({ pod: 'Not A Pod', kubeconfig: '/nonexistent' }), /pod/)
  assert.throws(() => podEvents({ requestTimeoutMs: -1 }), /requestTimeoutMs/)
  const off = podEvents({ kubeconfig: '/nonexistent/kubeconfig', pod: 'p1' })
  const warnings: string[] = []
  const { EventEmitter } = await import('node:events')
  const detach = off.attach({ lifecycle: new EventEmitter() as never, logger: { debug () {}, info () {}, error () {}, warn: (_o: object, m?: string) => { warnings.push(m ?? '') } } })
  assert.equal(warnings.length, 1)
  assert.match(warnings[0]!, /pod events off/)
  off.record({ type: 'Normal', reason: 'Test', message: 'x' })
  assert.equal(off.attempts, 0)
  await detach()
})
