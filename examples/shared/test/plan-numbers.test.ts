// The examples' READMEs quote `lameduck plan`: its excerpt in examples/eureka, and the
// terminationGracePeriodSeconds each manifest snippet says the plan gives. Both come from
// running the CLI here, so a change to the plan shows up as a stale README.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { globSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const examples = fileURLToPath(new URL('../..', import.meta.url))
const cli = join(dirname(createRequire(import.meta.url).resolve('@lameduck/cli/package.json')), 'src', 'bin.ts')

function plan (args: string): string {
  const r = spawnSync(process.execPath, ['--conditions=@lameduck/source', cli, 'plan', ...args.split(/\s+/)], { encoding: 'utf8' })
  assert.equal(r.status, 0, `lameduck plan ${args}: ${r.stderr}`)
  return r.stdout
}

test('the eureka example\'s `lameduck plan` excerpt is what the CLI prints', () => {
  const readme = readFileSync(join(examples, 'eureka', 'README.md'), 'utf8')
  const excerpt = /```\n\$ lameduck plan ([^\n]+)\n([\s\S]*?)```/.exec(readme)
  assert.ok(excerpt, 'a ```$ lameduck plan ...``` block')
  assert.equal(excerpt[2], plan(excerpt[1]!), `refresh examples/eureka/README.md with: npx lameduck plan ${excerpt[1]}`)
})

test('every terminationGracePeriodSeconds the examples attribute to `lameduck plan` is what it prints', () => {
  const claims: { file: string, args: string, seconds: number }[] = []
  for (const file of globSync('*/README.md', { cwd: examples })) {
    const text = readFileSync(join(examples, file), 'utf8')
    // `terminationGracePeriodSeconds: 27   # \`lameduck plan ...\``, or prose: `lameduck plan ...` gives / prints ... `terminationGracePeriodSeconds: 27`
    for (const m of text.matchAll(/terminationGracePeriodSeconds: (\d+)\s+# `lameduck plan ([^`]+)`/g)) claims.push({ file, args: m[2]!, seconds: Number(m[1]) })
    for (const m of text.matchAll(/`lameduck plan ([^`]+)`[^`]{0,80}`terminationGracePeriodSeconds: (\d+)`/g)) claims.push({ file, args: m[1]!, seconds: Number(m[2]) })
    for (const m of text.matchAll(/`lameduck plan ([^`]+)` prints the whole patch[^`]*`{3}yaml[\s\S]*?terminationGracePeriodSeconds: (\d+)/g)) claims.push({ file, args: m[1]!, seconds: Number(m[2]) })
  }
  assert.ok(claims.length >= 7, `found ${claims.length} claims`)
  const printed = new Map<string, number>()
  for (const c of claims) {
    const args = c.args.trim().split(/\s+/).join(' ')
    if (!printed.has(args)) printed.set(args, Number(/terminationGracePeriodSeconds: (\d+)/.exec(plan(args))![1]))
    assert.equal(c.seconds, printed.get(args), `${c.file}: lameduck plan ${args}`)
  }
})
