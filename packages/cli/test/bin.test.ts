import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { main } from '../src/main.ts'
import { COMMANDS } from '../src/commands/index.ts'
import { EXIT } from '../src/command.ts'
import { Capture, runBin } from './helpers.ts'

async function run (argv: string[]): Promise<{ code: number, stdout: string, stderr: string }> {
  const stdout = new Capture()
  const stderr = new Capture()
  const code = await main(argv, { stdout, stderr, env: {}, signal: new AbortController().signal })
  return { code, stdout: stdout.text, stderr: stderr.text }
}

test('lameduck --help lists every command; no command is a usage error', async () => {
  const help = await run(['--help'])
  assert.equal(help.code, EXIT.OK)
  for (const c of COMMANDS) assert.match(help.stdout, new RegExp(`^  ${c.name} +\\S`, 'm'))
  assert.match(help.stdout, /Exit codes:\n {2}0 {2}ok\n {2}1 {2}failed/)
  const none = await run([])
  assert.equal(none.code, EXIT.USAGE)
  assert.match(none.stderr, /^lameduck: lossless rolling deploys/)
})

test('lameduck <command> --help prints the command help, with an example', async () => {
  for (const entry of COMMANDS) {
    const r = await run([entry.name, '--help'])
    assert.equal(r.code, EXIT.OK)
    assert.match(r.stdout, new RegExp(`^Usage: lameduck ${entry.name}`))
    assert.match(r.stdout, /Example/)
    assert.match(r.stdout, /Exit codes/)
    assert.equal((await run(['help', entry.name])).stdout, r.stdout)
  }
})

test('unknown command: usage on stderr, a suggestion, exit 2', async () => {
  const r = await run(['prestpo'])
  assert.equal(r.code, EXIT.USAGE)
  assert.match(r.stderr, /^lameduck: unknown command 'prestpo' \(did you mean 'prestop'\?\)\n\nlameduck: lossless/)
  assert.equal(r.stdout, '')
})

test('bad flags: the message, a pointer to --help, exit 2', async () => {
  const r = await run(['plan', '--windows'])
  assert.equal(r.code, EXIT.USAGE)
  assert.match(r.stderr, /^lameduck plan: Option '--windows <value>' argument missing\nRun 'lameduck plan --help' for its flags and an example\.\n$/)
})

test('--version prints the package version', async () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  assert.equal((await run(['--version'])).stdout, `${pkg.version}\n`)
})

test('bin.ts: a real process, with a shebang, exit codes from the command', async () => {
  const source = readFileSync(new URL('../src/bin.ts', import.meta.url), 'utf8')
  assert.ok(source.startsWith('#!/usr/bin/env node\n'))
  const help = await runBin(['--help'])
  assert.equal(help.code, 0)
  assert.match(help.stdout, /Usage: lameduck <command>/)
  const unknown = await runBin(['nope'])
  assert.equal(unknown.code, 2)
  const plan = await runBin(['plan', '--windows', 'nacos', '--json'])
  assert.equal(plan.code, 0)
  assert.equal(JSON.parse(plan.stdout).window.totalMs, 11_500)
})
