// Propagation measured on real Nacos 2.3.1 and 3.1.0 (helpers/nacos-propagation.ts): a lameduck
// provider deregisters 20 times with push on and 20 with push off (6 on 2.3.1, whose poll period is 10 s), and each consumer's drop is set
// against nacosWindows() term by term, so a wrong formula fails:
//   - push on (server cacheMillis 10 s): within the push term (pushDelay 500 + task check 100) plus
//     the formula's margin — never the 11.6 s total that polling alone would meet;
//   - push off: within the total for its poll period, and later than the push term allows (the poll
//     term is needed). 2.3.1: the v1 SDK with push: false at the server's 10 s cacheMillis (its
//     floor); 3.1.0: transport 'v3' polling every second.
// `node --conditions=@lameduck/source test/real/nacos-propagation.ts` prints the table.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { realTestOptions } from './helpers/nacos-modern.ts'
import { measureNacosPropagation, propagationTable, summarize } from './helpers/nacos-propagation.ts'

for (const version of ['2.3.1', '3.1.0'] as const) {
  test(`real Nacos ${version}: propagation to the Java gRPC consumer and the Node discovery, push on and off, inside nacosWindows() term by term`, { ...realTestOptions(), timeout: 600_000 }, async (t) => {
    // A v1 poll drain costs the server's 10 s cacheMillis: 6 of them show the poll term (each starts
    // right after a poll, so it measures nearly the whole period) in a minute instead of 200 s.
    const pollDrains = version === '2.3.1' ? 6 : 20
    const runs = await measureNacosPropagation(version, { drains: 20, pollDrains, pollTransport: version === '3.1.0' ? 'v3' : 'v1' })
    t.diagnostic(`\n${propagationTable(runs)}`)
    const [push, poll] = runs as [typeof runs[0], typeof runs[0]]
    const pushBound = push.window.serverCacheMs + push.window.marginMs
    for (const consumer of ['java-grpc', 'node-push'] as const) {
      const s = summarize(push, consumer)
      assert.equal(s.n, 20)
      assert.ok(s.max <= pushBound, `${consumer}: max ${s.max} ms with push on exceeds the push term + margin (${pushBound} ms); the poll total (${Object.values(push.window).reduce((a, b) => a + b, 0)} ms) must not be what covers it`)
    }
    const java = summarize(push, 'java-grpc')
    assert.ok(java.lastRequestMax <= pushBound, `the Java consumer's last request to the leaving instance came ${java.lastRequestMax} ms after deregister()`)
    assert.ok(push.drains.filter((d) => d.consumer === 'java-grpc' && (d.requestsAfter ?? 0) > 0).length >= 15, 'the Java consumer was calling the instance when it left (not vacuous)')
    const p = summarize(poll, 'node-poll')
    const pollTotal = Object.values(poll.window).reduce((a, b) => a + b, 0)
    assert.equal(p.n, pollDrains)
    assert.ok(p.max <= pollTotal, `node-poll: max ${p.max} ms exceeds the push-off window ${pollTotal} ms (${JSON.stringify(poll.window)})`)
    assert.ok(p.max > poll.window.serverCacheMs + 100, `node-poll: max ${p.max} ms — the poll term did not show; is push really off?`)
  })
}
