// Propagation measured on the real path (real Nacos 0.8.0 server → real Java
// nacos-client 0.8.0 → a Node provider), push on and off, 20 drains each: the
// consumer's last request to a deregistered instance must fall inside the
// window nacosWindows() computes for the same settings.
// `node --conditions=@lameduck/source test/real/nacos-propagation.ts` prints the table.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { realTestOptions } from './helpers/nacos-server.ts'
import { measureNacosPropagation, propagationTable, summarize } from './helpers/nacos-propagation.ts'

for (const push of [true, false]) {
  test(`real Nacos → Java nacos-client (push ${push ? 'on' : 'off'}): the last request to a deregistered instance falls inside nacosWindows()`, { ...realTestOptions(), timeout: 180_000 }, async (t) => {
    const run = await measureNacosPropagation({ push, drains: 20 })
    t.diagnostic(`\n${propagationTable([run])}`)
    const s = summarize(run)
    assert.equal(run.drains.length, 20)
    // The consumer really was sending to the leaving instance when it left (the measurement is not vacuous).
    assert.ok(run.drains.filter((d) => d.requestsAfter > 0).length >= 15, `requests after confirmation: ${run.drains.map((d) => d.requestsAfter).join(',')}`)
    if (push) {
      // The term gap, pinned: 0.8.0 pushes after ~1 s, longer than the window's 500 ms push term
      // (the 2.x default); only the poll term makes the total cover it (docs/fidelity.md).
      assert.ok(s.p50 > run.window.parts.serverCacheMs, `p50 ${s.p50} ms vs push term ${run.window.parts.serverCacheMs} ms`)
    }
    assert.ok(s.max <= run.window.totalMs, `measured max ${s.max} ms exceeds the window ${run.window.totalMs} ms (${JSON.stringify(run.window.parts)})`)
  })
}
