// The 20-drain propagation set-up waits for every consumer to route to a provider again before its
// next drain; when one consumer lags (a starved JVM, a failed fetch) it names that consumer and what
// it did last, instead of failing the measurement with "never became routable".
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { CallLine } from './helpers/eureka.ts'
import { slowConsumers } from './helpers/propagation.ts'
import type { Provider } from './helpers/providers.ts'

const call = (t: number, instance: string | null, known: string[], status = 200, error: string | null = null): CallLine =>
  ({ lab: 'call', target: 'orders', t, ms: 1, instance, status, error, known })

test('slowConsumers names the consumers that have not routed to the provider since it came back, with their last call', () => {
  const p = { id: 'p1' } as Provider
  const now = Date.now()
  const onlineAt = now - 5_000
  const seenBy = (q: Provider, cs: CallLine[]): boolean => cs.some((c) => c.instance === q.id && c.t > onlineAt)
  const names = slowConsumers({
    'java-1': [call(now - 100, 'p1', ['p1', 'p2'])],
    'java-2': [call(now - 9_000, 'p1', ['p1']), call(now - 50, 'p2', ['p2'], 503, 'upstream')],
    'node-1': []
  }, p, seenBy)
  assert.equal(names.length, 2)
  assert.match(names[0]!, /^java-2 \(last call \d+ ms ago to p2, 503 upstream; does not list p1\)$/)
  assert.equal(names[1], 'node-1 (no call yet)')
})
