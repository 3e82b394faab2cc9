// The callgrind profile names V8's JIT code through the perf map: a server whose requests run one
// named function hard shows that function, by name, with about the instructions its loop costs.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { get } from 'node:http'
import { readdirSync, rmSync } from 'node:fs'
import { hasValgrind, profileDir, profiledCount, type OpenLoad } from '../src/index.ts'

const script = new URL('./fixtures/hot-server.ts', import.meta.url)

const requests: OpenLoad = (port) => ({
  run: async (n) => {
    for (let i = 0; i < n; i++) {
      await new Promise<void>((resolve, reject) => { get({ port, host: '127.0.0.1', path: '/' }, (res) => { res.resume(); res.on('end', resolve) }).on('error', reject) })
    }
  },
  close: () => {}
})

test('profiledCount costs the measured requests by function, JIT code named', { skip: !hasValgrind() && 'valgrind not installed' }, async (t) => {
  const dir = profileDir()
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const logs = (): string[] => readdirSync(process.cwd()).filter((f) => f.startsWith('isolate-') && f.endsWith('-v8.log'))
  const before = logs()
  const p = await profiledCount(script, [], requests, { warm: 20, measured: 20, profile: dir })
  // --perf-basic-prof makes V8 open an isolate log in its cwd: the dumps' directory, not the caller's (the repo).
  assert.deepEqual(logs().filter((f) => !before.includes(f)), [], 'no V8 isolate log left in the working directory')
  assert.ok(p.costs !== undefined)
  const probe = [...p.costs].filter(([name]) => name.includes('lameduckProfileProbe'))
  assert.ok(probe.length > 0, `the probe function is named in the profile: ${[...p.costs.keys()].slice(0, 20).join(', ')}`)
  const perRequest = probe.reduce((sum, [, n]) => sum + n, 0) / p.per
  // 20,000 iterations of a multiply, add and modulo: tens of instructions each, whatever the tier.
  assert.ok(perRequest > 100_000, `the probe's loop costs ${perRequest} per request`)
  assert.ok(p.threads[0]! >= perRequest, 'the main thread carries it')
})
