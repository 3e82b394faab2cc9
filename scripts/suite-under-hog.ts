// The suite's stability proof: `node scripts/test.ts` N times in a row while a
// CPU hog spins on every core (--core all, the default; or one: --core 0), each run's counts on one line.
// Timing-sensitive tests fail first on a starved machine; this shows none do.
//   node scripts/suite-under-hog.ts [--runs 5] [--core all] [-- <paths for scripts/test.ts>]
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { startHog } from './hog.ts'

const { values, positionals } = parseArgs({ allowPositionals: true, options: { runs: { type: 'string', default: '5' }, core: { type: 'string', default: 'all' }, out: { type: 'string' } } })
const runs = Number(values.runs)
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive integer (got ${values.runs})`)

interface Run { run: number, seconds: number, exitCode: number | null, counts: Record<string, number> }

function suite (run: number): Promise<Run> {
  const started = Date.now()
  const child = spawn(process.execPath, ['scripts/test.ts', ...positionals], { env: { ...process.env, LAMEDUCK_TEST_REPORTER: 'spec' }, stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (d: Buffer) => { out += d })
  return new Promise((resolve) => child.on('exit', (exitCode) => {
    // The runner's own summary lines: ℹ tests 627, ℹ pass 621, ℹ fail 0, ...
    const counts: Record<string, number> = {}
    for (const m of out.matchAll(/^ℹ (tests|pass|fail|cancelled|skipped|todo) (\d+)$/gm)) counts[m[1]!] = Number(m[2])
    const failing = [...out.matchAll(/^✖ (.*)$/gm)].map((m) => m[1]).filter((l) => l !== 'failing tests:')
    if (failing.length > 0) {
      console.log(`run ${run} failing:\n  ${[...new Set(failing)].join('\n  ')}`)
      // The runner's closing section has each failure with its error and stack.
      const at = out.indexOf('✖ failing tests:')
      if (at !== -1) writeFileSync(`suite-under-hog-run-${run}.log`, out.slice(at))
    }
    resolve({ run, seconds: Math.round((Date.now() - started) / 1000), exitCode, counts })
  }))
}

const hog = startHog(values.core)
const results: Run[] = []
try {
  for (let i = 1; i <= runs; i++) {
    const r = await suite(i)
    results.push(r)
    console.log(`run ${i}/${runs}: exit ${r.exitCode}, ${r.seconds} s, tests ${r.counts.tests ?? '?'}, pass ${r.counts.pass ?? '?'}, fail ${r.counts.fail ?? '?'}, cancelled ${r.counts.cancelled ?? '?'}, skipped ${r.counts.skipped ?? '?'}`)
  }
} finally {
  hog.kill()
}
const failed = results.filter((r) => r.exitCode !== 0 || (r.counts.fail ?? 1) > 0 || (r.counts.cancelled ?? 0) > 0)
console.log(`\n${runs} runs under CPU hogs on core(s) ${values.core}: ${failed.length === 0 ? 'all green' : `${failed.length} failed`}`)
if (values.out !== undefined) writeFileSync(values.out, JSON.stringify(results, null, 2) + '\n')
process.exitCode = failed.length === 0 ? 0 : 1
