// Propagation measured, window predicted: 20 drains of lameduck providers registered at the real
// Eureka server, seen by real Java consumers (Eureka client + Spring Cloud LoadBalancer) and Node
// consumers (eureka-js-client), every period at its default × 0.1. The window eurekaWindows()
// computes for the same settings must cover the slowest consumer's last request to the leaving
// instance; no request may fail meanwhile (the providers keep serving through their window).
// The table lands in the test output; test/real/propagation-table.ts prints the same for docs.
import { test } from 'node:test'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import assert from 'node:assert/strict'
import { propagationWindow } from '@lameduck/core'
import { measurePropagation, rows, table } from './helpers/propagation.ts'

/** Request latency and the 25 ms server poll / 20 ms call loop resolution. The Node consumers run in
 * this process, so the event loop's own measured worst delay (a busy machine) is added on top. */
const TOLERANCE_MS = 250

test('real Eureka: DELETE → last request stays within eurekaWindows() on the Java (Spring Cloud LoadBalancer) and Node paths, 0 lost', { timeout: 480_000 }, async (t) => {
  const lag = monitorEventLoopDelay({ resolution: 10 })
  lag.enable()
  const m = await measurePropagation({ scale: 0.1, drains: 20, naiveControl: true, log: (line) => t.diagnostic(line) })
  lag.disable()
  const allowed = TOLERANCE_MS + Math.round(lag.max / 1e6)
  t.diagnostic(`allowed over the window: ${TOLERANCE_MS} ms + event-loop lag ${allowed - TOLERANCE_MS} ms`)
  for (const line of table(m).split('\n')) t.diagnostic(line)
  assert.equal(m.drains.length, 20)
  assert.deepEqual(m.failed, { java: 0, node: 0 }, `failed requests: ${m.errors.join('; ')}`)
  // Negative control: the same consumers do see losses when a provider deregisters and exits at once.
  t.diagnostic(`naive control (DELETE, then closed at once): ${m.naiveFailed} requests failed`)
  assert.ok(m.naiveFailed! > 0, 'a provider that closes right after its DELETE loses requests')
  for (const path of ['java', 'node'] as const) {
    const window = propagationWindow(m.windows[path]).totalMs
    const terms = rows(m, path)
    const total = terms.at(-1)!
    assert.ok(total.maxMs <= window + allowed, `${path}: a consumer routed to the leaving instance ${total.maxMs} ms after the DELETE, past the ${window} ms window`)
    // Term by term (server read-only cache tick, client fetch, LoadBalancer cache): each measured
    // maximum within its own window term, so a term that runs over cannot hide behind another's slack.
    // A term is measured between two samples (the 25 ms server poll, a consumer's calls), so each
    // carries the same allowance as the total, taken from the samples' sure side (Row.maxLowMs: a
    // consumer starved for seconds between two calls must not read as a late fetch).
    for (const term of terms.slice(0, -1)) {
      assert.ok(Number.isFinite(term.maxLowMs), `${path}: ${term.term} measured`)
      assert.ok(term.maxLowMs <= term.windowMs + allowed, `${path}: ${term.term} reached ${term.maxLowMs} ms (sure side; ${term.maxMs} ms at the first sample after), past its ${term.windowMs} ms term`)
    }
    // Each drain was seen: the consumer routed to the instance right up to the drain.
    for (const d of m.drains) {
      for (const [consumer, hop] of Object.entries(d.hops)) {
        assert.ok(Number.isFinite(hop.clientDropMs), `${consumer} never dropped ${d.provider} from its registry cache`)
      }
    }
  }
})
