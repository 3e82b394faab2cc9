// The shutdown budget the engine is given is the one the lifecycle bounds an
// unconfirmed deregistration by: a user's shutdownTimeoutMs, and a sidecar's
// drain bound counted out of it (the sidecar needs that time after the window).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { silentLogger, type Registry } from '@lameduck/core'
import { attach, type AttachOptions } from '@lameduck/node'
import { until } from '@lameduck/test-utils'

/** A registry that registers but never confirms a deregistration. */
const stuck = (): Registry => ({ async register () {}, async deregister () { throw new Error('503 Service Unavailable') }, async close () {} })

async function drainBound (options: Partial<AttachOptions>): Promise<number> {
  const server = createServer((_req, res) => { res.end('ok') })
  const lameduck = await attach(server, { service: 'orders', host: '127.0.0.1', registry: stuck(), windows: { clientFetchMs: 1_000 }, warmupMs: 0, signals: false, admin: false, logger: silentLogger, ...options })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    await until(() => lameduck.state === 'serving', 'serving')
    lameduck.offline().catch(() => {}) // never settles here: the registry never confirms
    const drain = await until(() => lameduck.lifecycle.drain, 'the drain')
    return drain.latestWindowEndAt - drain.startedAt
  } finally {
    await lameduck.close()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

test("the user's shutdownTimeoutMs bounds the window of an unconfirmed deregistration", async () => {
  // bound = shutdownTimeoutMs − maxRequestMs
  assert.equal(await drainBound({ shutdownTimeoutMs: 40_000, maxRequestMs: 2_000 }), 38_000)
  assert.equal(await drainBound({ shutdownTimeoutMs: 12_000, maxRequestMs: 2_000 }), 10_000)
})

test("a sidecar's drain bound is counted out of the budget, given or defaulted", async () => {
  const sidecar = { afterWindow: [{ name: 'drain-proxy', run: async () => {} }], drainTimeoutMs: 7_000 }
  // bound = shutdownTimeoutMs − maxRequestMs − the sidecar's drain bound
  assert.equal(await drainBound({ shutdownTimeoutMs: 40_000, maxRequestMs: 2_000, sidecar }), 31_000)
  // Default budget: window 1 000 + sidecar 7 000 + maxRequestMs 2 000 + close slack 5 000; bound = 6 000 (the window's slack)
  assert.equal(await drainBound({ maxRequestMs: 2_000, sidecar }), 6_000)
})
