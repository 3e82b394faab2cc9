// The lab's Deployment controller: the surge budget counts pods still being made. A pod whose
// sidecar takes a while to start (the real Envoy binary) is not in `pods` yet, and the controller
// once created a new pod on every turn until the first one was made (12 v2 pods for 3 replicas).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { Deployment } from '../src/rollout/deployment.ts'
import type { Pod, TerminationResult } from '../src/rollout/pod.ts'

class FakePod extends EventEmitter {
  ready = false
  terminatingAt: number | null = null
  readonly id: string
  readonly version: string
  constructor (id: string, version: string) { super(); this.id = id; this.version = version }
  async start (): Promise<void> {
    setImmediate(() => { this.ready = true; this.emit('ready', true) })
  }
}

test('deployment: a slow-to-make pod counts against maxSurge (no extra pods while sidecars start)', async () => {
  const made: string[] = []
  let inMaking = 0
  let peakMaking = 0
  const deployment = new Deployment({
    strategy: { replicas: 3, maxSurge: 1, maxUnavailable: 0 },
    progressDeadlineMs: 30_000,
    async makePod (version, index) {
      inMaking++
      peakMaking = Math.max(peakMaking, inMaking)
      // The sidecar starts in its own process: several turns of the event loop.
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve))
      inMaking--
      made.push(`${version}-${index}`)
      return new FakePod(`${version}-${index}`, version) as unknown as Pod
    },
    async terminate (pod) {
      const p = pod as unknown as FakePod
      p.terminatingAt = Date.now()
      p.emit('terminating')
      p.ready = false
      return { id: p.id, deletedAt: p.terminatingAt, preStopMs: null, preStopExit: null, sigtermAt: p.terminatingAt, exitedAt: Date.now(), exitCode: 0, signal: null, killed: false } satisfies TerminationResult
    }
  })
  await deployment.scaleUp('v1')
  await deployment.rollTo('v2')
  assert.equal(made.filter((m) => m.startsWith('v2')).length, 3, `v2 pods made: ${made.join(', ')}`)
  assert.ok(peakMaking <= 3, `at most the replicas were being made at once (peak ${peakMaking})`)
  assert.equal(deployment.terminations.length, 3)
})
