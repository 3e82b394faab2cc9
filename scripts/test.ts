// Runs every test file of the repo in one `node --test` run, so CI ends with the
// runner's own summary. Test files import workspace packages through the
// `@lameduck/source` export condition: TypeScript sources run directly, no build needed.
//   node scripts/test.ts                  all tests
//   node scripts/test.ts packages/core    only files under that path
// test/real/ (real Eureka server and Java consumer, need a JDK and Maven) runs only when named:
//   node scripts/test.ts test/real        (npm run test:real builds the jars first)
// test/k8s/ (a real kube-apiserver, built from Go) likewise: npm run test:k8s.
import { spawn } from 'node:child_process'
import { globSync } from 'node:fs'

const roots = process.argv.slice(2).filter((a) => !a.startsWith('-'))
const extra = process.argv.slice(2).filter((a) => a.startsWith('-'))
const patterns = ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts', 'examples/*/test/**/*.test.ts']
const files = patterns.flatMap((p) => globSync(p, { exclude: (f) => f.includes('node_modules') }))
  .filter((f) => roots.length === 0 || roots.some((r) => f.startsWith(r.replace(/\/$/, ''))))
  .filter((f) => !f.startsWith('test/real/') || roots.some((r) => r.replace(/\/$/, '').startsWith('test/real')))
  .filter((f) => !f.startsWith('test/k8s/') || roots.some((r) => r.replace(/\/$/, '').startsWith('test/k8s')))
  .sort()

if (files.length === 0) {
  console.error(`no test files match ${roots.join(' ') || patterns.join(' ')}`)
  process.exit(1)
}

const args = [
  '--conditions=@lameduck/source',
  '--test',
  `--test-concurrency=${process.env.LAMEDUCK_TEST_CONCURRENCY ?? '3'}`,
  '--test-timeout=180000',
  `--test-reporter=${process.env.LAMEDUCK_TEST_REPORTER ?? 'spec'}`,
  ...extra,
  ...files
]
const child = spawn(process.execPath, args, { stdio: 'inherit', env: { ...process.env, LAMEDUCK_TEST: '1' } })
child.on('exit', (code, signal) => { process.exitCode = code ?? (signal ? 1 : 0) })
