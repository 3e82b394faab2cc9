// `lameduck-devkit rollout --registry eureka-real|nacos-real`: the real servers are JVMs built from
// the repository's test/real, so from a clone the devkit hands the run to test/real/rollout.ts
// instead of failing on an unknown registry. (nacos-real with the spring consumer is refused there by name: no JVM.)
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const BIN = fileURLToPath(new URL('../src/bin.ts', import.meta.url))

test('rollout --registry nacos-real is handed to test/real/rollout.ts, which checks the consumer before starting anything', () => {
  const r = spawnSync(process.execPath, ['--conditions=@lameduck/source', BIN, 'rollout', '--registry', 'nacos-real', '--consumer', 'spring', '--quiet'], { cwd: ROOT, encoding: 'utf8' })
  assert.equal(r.status, 1, r.stdout + r.stderr)
  assert.match(r.stderr, /test\/real\/rollout\.ts: \[LAMEDUCK_ERR_INVALID_OPTION\] .*nacos-real runs with the node or balancer consumer/)
})

test('rollout --help names the real-server runner', () => {
  const r = spawnSync(process.execPath, ['--conditions=@lameduck/source', BIN, 'rollout', '--help'], { cwd: ROOT, encoding: 'utf8' })
  assert.equal(r.status, 0)
  assert.match(r.stdout, /eureka-real.*\n.*test\/real\/rollout\.ts/)
})

test('rollout and demo: a bad flag value exits 2 naming the flag typed, before anything starts', () => {
  const cases: Array<[string[], RegExp]> = [
    [['rollout', '--rps', 'lots'], /^lameduck-devkit rollout: --rps: must be a number, got 'lots'\n/],
    [['rollout', '--providers', '0', '--quiet'], /^lameduck-devkit rollout: --providers: must be an integer ≥ 1/],
    [['rollout', '--mode', 'fast', '--quiet'], /^lameduck-devkit rollout: --mode: must be naive, sleep or lameduck/],
    [['demo', '--runs', '0'], /^lameduck-devkit demo: --runs: must be an integer >= 1, got number 0\n/]
  ]
  for (const [args, message] of cases) {
    const r = spawnSync(process.execPath, ['--conditions=@lameduck/source', BIN, ...args], { cwd: ROOT, encoding: 'utf8' })
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`)
    assert.match(r.stderr, message)
    assert.match(r.stderr, new RegExp(`Run 'lameduck-devkit ${args[0]} --help' for its options\\.\\n$`))
  }
})
