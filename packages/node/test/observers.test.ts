// `observers`: collaborators on the lifecycle's events (telemetry, a readiness
// gate) get the engine's own lifecycle, see a whole drain as phases, and are
// detached — awaited — only after the lifecycle stopped.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { LifecycleObserver, PhaseChange } from '@lameduck/core'
import { attach } from '@lameduck/node'
import { startServer, stop, until } from './helpers.ts'

test('an observer sees the drain phases of the engine it is attached to and is detached after stopped', async (t) => {
  const seen: string[] = []
  const observer: LifecycleObserver = {
    name: 'timeline',
    attach ({ lifecycle }) {
      const onPhase = (c: PhaseChange): void => { seen.push(`${c.phase} (${c.reason})`) }
      const onState = (c: { to: string }): void => { if (c.to === 'stopped') seen.push('stopped') }
      lifecycle.on('phase', onPhase)
      lifecycle.on('state', onState)
      return async () => {
        await new Promise((resolve) => setImmediate(resolve))
        seen.push(`detached in ${lifecycle.state}`)
        lifecycle.off('phase', onPhase)
        lifecycle.off('state', onState)
      }
    }
  }
  const s = await startServer({ observers: [observer], windows: { clientFetchMs: 50 } })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  await s.lameduck.offline({ reason: 'test' })
  assert.deepEqual(seen, ['deregistering (test)', 'window (deregistration confirmed)', 'inflight (window elapsed)'])
  await s.lameduck.close()
  assert.deepEqual(seen.slice(3), ['stopped', 'detached in stopped'])
})

test('observers: bad input is refused at attach() with the option named', async () => {
  await assert.rejects(attach(createServer(), { service: 'x', signals: false, admin: false, observers: [{ name: 'x' }] as never }), /^InvalidOptionError: observers\[0\]: must be a lifecycle observer/)
})
