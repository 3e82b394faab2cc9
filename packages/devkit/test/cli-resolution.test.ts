// The rollout lab runs the real CLI as its preStop; it finds it through the
// package, never by a path into a sibling folder (see rollout.ts cliBin()).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

test('@lameduck/cli/bin resolves through the package exports to a file that exists', () => {
  const file = fileURLToPath(import.meta.resolve('@lameduck/cli/bin'))
  assert.ok(existsSync(file), file)
  // Tests run with the @lameduck/source condition: the TypeScript entry, no build needed.
  assert.match(file, /packages\/cli\/src\/bin\.ts$/)
})
