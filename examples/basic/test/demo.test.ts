// `npm run demo -w @lameduck/example-basic` does what the README says: the offline sequence
// under steady traffic, an offline report, and not one failed request.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'

const dir = fileURLToPath(new URL('..', import.meta.url))

test('examples/basic: the demo script goes offline under traffic and loses nothing', () => {
  const { scripts } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }
  assert.equal(scripts.demo, 'node ../../scripts/check-node.cjs && node --conditions=@lameduck/source src/demo.ts')
  const r = spawnSync(process.execPath, scripts.demo!.split(' && ')[1]!.split(' ').slice(1), { cwd: dir, encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /serving → draining/)
  assert.match(r.stdout, /offline report: \{.*"outcome":"offline"/)
  const counts = /requests ok: (\d+), failed: (\d+), answered with x-lameduck-state: draining: (\d+)/.exec(r.stdout)
  assert.ok(counts, r.stdout)
  assert.equal(counts[2], '0', 'no request failed')
  assert.ok(Number(counts[1]) > 0 && Number(counts[3]) > 0, 'requests were served, some marked draining')
})
