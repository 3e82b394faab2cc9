// `lameduck-devkit rollout --registry kubernetes`: the real control plane is built from the Go module
// proxy into a cache by the repository's test/k8s, so from a clone the devkit hands the run to
// test/k8s/rollout.ts (which checks its flags before starting anything).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const BIN = fileURLToPath(new URL('../src/bin.ts', import.meta.url))

test('rollout --registry kubernetes is handed to test/k8s/rollout.ts, which checks --mode before starting the control plane', () => {
  const r = spawnSync(process.execPath, ['--conditions=@lameduck/source', BIN, 'rollout', '--registry', 'kubernetes', '--mode', 'fast', '--quiet'], { cwd: ROOT, encoding: 'utf8' })
  assert.equal(r.status, 2, r.stdout + r.stderr)
  assert.match(r.stderr, /^test\/k8s\/rollout\.ts: --mode: must be naive, sleep or lameduck, got 'fast'\n$/)
})

test('rollout --help names the kubernetes runner', () => {
  const r = spawnSync(process.execPath, ['--conditions=@lameduck/source', BIN, 'rollout', '--help'], { cwd: ROOT, encoding: 'utf8' })
  assert.equal(r.status, 0)
  assert.match(r.stdout, /kubernetes: a real kube-apiserver.*\n.*test\/k8s\/rollout\.ts/)
})
