// The termination message names what the window rested on: with window evidence
// (the EndpointSlice watch of @lameduck/kubernetes, or any WindowEvidence), each
// term and what ended it, so `kubectl describe pod` tells an observed window from
// a guessed one.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EvidenceReading, WindowEvidence } from '@lameduck/core'
import { startServer, stop, until } from './helpers.ts'

/** Evidence that sees its term end as the drain begins (an endpoint seen terminating at once). */
function seenAtOnce (): WindowEvidence {
  let at = 0
  return {
    name: 'test endpoint',
    part: 'endpointLagMs',
    restMs: 100,
    begin (now) { at = now },
    read (): EvidenceReading { return { state: 'over', at, detail: 'endpoint seen terminating' } },
    onChange () { return () => {} }
  }
}

test('the termination message names each window term and what ended it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-term-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'termination-log')
  const s = await startServer({ windows: { clientFetchMs: 50, endpointLagMs: 5_000 }, windowEvidence: seenAtOnce(), terminationMessage: { path } })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  await s.lameduck.offline({ reason: 'test' })
  const message = readFileSync(path, 'utf8')
  assert.match(message, /; window \d+\.\d s \(registry confirmed: deregistration confirmed \+ 0\.05 s \(the window without endpointLagMs\); endpointLagMs observed: test endpoint: endpoint seen terminating \+ 0\.1 s rest\);/)
})
