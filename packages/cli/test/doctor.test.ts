import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { doctor } from '../src/commands/doctor.ts'
import { EXIT } from '../src/command.ts'
import type { DoctorResult } from '../src/doctor/report.ts'
import { FIXTURES, runBin, runCommand } from './helpers.ts'

interface Case { fixture: string, code: string, severity: 'error' | 'warning', line: number, object: string }

// Each bad fixture must produce its finding at this line; the fixed twin must produce none at all.
const CASES: Case[] = [
  { fixture: 'prestop-missing', code: 'prestop-missing', severity: 'error', line: 18, object: 'Deployment/orders' },
  { fixture: 'grace-too-short', code: 'grace-too-short', severity: 'error', line: 17, object: 'StatefulSet/billing' },
  { fixture: 'sleep-shorter-than-window', code: 'sleep-shorter-than-window', severity: 'error', line: 22, object: 'DaemonSet/edge' },
  { fixture: 'readiness-missing', code: 'readiness-missing', severity: 'error', line: 10, object: 'Pod/orders-debug' },
  { fixture: 'readiness-slow', code: 'readiness-slow', severity: 'warning', line: 22, object: 'Deployment/orders' },
  { fixture: 'sidecar-stops-first', code: 'sidecar-stops-first', severity: 'error', line: 26, object: 'Deployment/orders' },
  { fixture: 'istio', code: 'sidecar-stops-first', severity: 'error', line: 13, object: 'Deployment/orders' },
  { fixture: 'istio', code: 'istio-hold-off', severity: 'warning', line: 15, object: 'Deployment/orders' },
  { fixture: 'etp-local', code: 'etp-local', severity: 'warning', line: 7, object: 'Service/orders' },
  { fixture: 'nginx-pod-upstream', code: 'nginx-pod-upstream', severity: 'warning', line: 5, object: 'Ingress/orders' },
  { fixture: 'bad-annotation', code: 'bad-annotation', severity: 'error', line: 6, object: 'Deployment/orders' }
]

const OLD_CODES = new Set(['prestop-missing', 'grace-too-short', 'sleep-shorter-than-window', 'readiness-missing', 'readiness-slow', 'sidecar-stops-first', 'istio-hold-off', 'etp-local', 'nginx-pod-upstream', 'bad-annotation'])

async function check (file: string, ...flags: string[]): Promise<{ code: number, result: DoctorResult, stderr: string }> {
  const run = await runCommand(doctor, [join(FIXTURES, file), '--json', ...flags])
  return { code: run.code, result: JSON.parse(run.stdout) as DoctorResult, stderr: run.stderr }
}

for (const c of CASES) {
  test(`doctor: ${c.code} is caught in ${c.fixture}.bad.yaml (line ${c.line}) and absent in ${c.fixture}.fixed.yaml`, async () => {
    const bad = await check(`${c.fixture}.bad.yaml`)
    const found = bad.result.findings.filter((f) => f.code === c.code)
    assert.equal(found.length, 1, JSON.stringify(bad.result.findings, null, 2))
    const f = found[0]!
    assert.equal(f.severity, c.severity)
    assert.equal(f.line, c.line)
    assert.equal(f.object, c.object)
    assert.ok(f.message.length > 40 && f.fix.length > 20, 'says what goes wrong and how to fix it')
    const errors = bad.result.findings.some((x) => x.severity === 'error')
    assert.equal(bad.code, errors ? EXIT.FAILED : EXIT.OK, 'exit 1 only on findings that lose traffic')

    const fixed = await check(`${c.fixture}.fixed.yaml`)
    // The twin is fixed for the checks these fixtures were written for (newer checks have their own fixtures).
    assert.deepEqual(fixed.result.findings.filter((f) => OLD_CODES.has(f.code)), [])
    assert.equal(fixed.code, EXIT.OK)
  })
}

test('doctor: trade-off findings say what the other choice costs, and --strict fails on them', async () => {
  for (const fixture of ['etp-local.bad.yaml', 'nginx-pod-upstream.bad.yaml']) {
    const { code, result } = await check(fixture)
    assert.equal(code, EXIT.OK)
    assert.match(result.findings[0]!.tradeoff!, /source IP|balancing/)
    assert.equal((await check(fixture, '--strict')).code, EXIT.FAILED)
  }
})

test('doctor: the text report names file:line:column, severity, code and the fix', async () => {
  const file = join(FIXTURES, 'grace-too-short.bad.yaml')
  const run = await runCommand(doctor, [file])
  assert.equal(run.code, EXIT.FAILED)
  assert.match(run.stdout, /StatefulSet\/billing \(line 2\): window 90 s \(eureka-ribbon, annotation lameduck\.dev\/windows\), longest request 5 s/)
  assert.ok(run.stdout.includes(`${file}:17:7  error  grace-too-short  StatefulSet/billing\n`))
  assert.match(run.stdout, /terminationGracePeriodSeconds is 60, but draining takes the 90 s window \(eureka-ribbon, annotation lameduck\.dev\/windows\) \+ 5 s longest request \+ 5 s to close: kubelet SIGKILLs the pod at 60 s/)
  assert.match(run.stdout, /fix: set terminationGracePeriodSeconds: 105 or more/)
  assert.match(run.stdout, /1 error, 0 warnings: a rolling deploy would lose traffic\n$/)
})

test('doctor: kind List items are located inside the list', async () => {
  const { result } = await check('list.bad.yaml', '--max-request-ms', '5000')
  assert.deepEqual(result.objects.map((o) => [o.object, o.line]), [['Pod/orders-a', 5], ['Pod/orders-b', 21]])
  assert.deepEqual(result.findings.map((f) => [f.code, f.object, f.line]), [['prestop-missing', 'Pod/orders-b', 27]])
})

test('doctor: --windows overrides the manifest, and the window decides the grace period', async () => {
  assert.deepEqual((await check('prestop-missing.fixed.yaml')).result.findings, [])
  const { result } = await check('prestop-missing.fixed.yaml', '--windows', 'eureka-ribbon')
  assert.deepEqual(result.findings.map((f) => f.code), ['grace-too-short'])
  assert.match(result.findings[0]!.message, /90 s window \(eureka-ribbon, --windows\)/)
  const parts = await check('prestop-missing.fixed.yaml', '--windows', '{"endpointLagMs":20000}', '--max-request-ms', '32000')
  assert.match(parts.result.findings[0]!.message, /draining takes the 20 s window \(custom, --windows\) \+ 32 s longest request \+ 5 s to close/)
})

test('doctor: several files and stdin (-) in one run', async () => {
  const run = await runCommand(doctor, [join(FIXTURES, 'etp-local.bad.yaml'), '-', '--json'], {
    stdin: (async function * () { yield Buffer.from(readFileSync(join(FIXTURES, 'prestop-missing.bad.yaml'))) })() as unknown as NodeJS.ReadableStream
  })
  const result = JSON.parse(run.stdout) as DoctorResult
  assert.deepEqual(result.files, [join(FIXTURES, 'etp-local.bad.yaml'), '<stdin>'])
  assert.deepEqual(result.findings.map((f) => `${f.file === '<stdin>' ? 'stdin' : 'file'}:${f.code}:${f.line}`).sort(), ['file:etp-local:7', 'stdin:prestop-missing:18'])
  assert.equal(run.code, EXIT.FAILED)
})

test('doctor: malformed YAML gets the file, line and what is wrong, exit 2, no stack trace', async () => {
  const file = join(FIXTURES, 'malformed.yaml')
  const run = await runCommand(doctor, [file])
  assert.equal(run.code, EXIT.USAGE)
  assert.equal(run.stdout, '')
  assert.match(run.stderr, new RegExp(`^lameduck doctor: ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:11:\\d+: invalid YAML: `))
  assert.match(run.stderr, /\n\s+ports:\n/, 'shows the offending line')

  // Through the real binary too: the message, and nothing that looks like a stack.
  const child = await runBin(['doctor', file])
  assert.equal(child.code, EXIT.USAGE)
  assert.match(child.stderr, /malformed\.yaml:11:\d+: invalid YAML/)
  assert.doesNotMatch(child.stderr, /^\s+at /m)

  const missing = await runCommand(doctor, [join(FIXTURES, 'nope.yaml')])
  assert.equal(missing.code, EXIT.USAGE)
  assert.match(missing.stderr, /cannot read .*nope\.yaml: no such file/)

  const duplicate = await runCommand(doctor, ['-'], { stdin: (async function * () { yield Buffer.from('kind: Pod\nkind: Service\n') })() as unknown as NodeJS.ReadableStream })
  assert.equal(duplicate.code, EXIT.USAGE)
  assert.match(duplicate.stderr, /<stdin>:2:1: invalid YAML: Map keys must be unique/)
})

test('doctor: needs a file, and explains a bad --windows', async () => {
  await assert.rejects(runCommand(doctor, []), /give the manifest to check: lameduck doctor FILE\.yaml \(or - for stdin\)/)
  await assert.rejects(runCommand(doctor, ['x.yaml', '--windows', 'eureka']), /--windows: unknown preset 'eureka'/)
})

function podWith (preStop: string, window = 'nacos'): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: { lameduck.dev/windows: ${window}, lameduck.dev/max-request-ms: "1000" }
spec:
  containers:
    - name: app
      image: x
      lifecycle:
        preStop:
${preStop.split('\n').map((l) => `          ${l}`).join('\n')}
      readinessProbe: { httpGet: { path: /health/ready, port: 3000 }, periodSeconds: 2, failureThreshold: 2 }
`
}

async function codesFor (yaml: string): Promise<string[]> {
  const run = await runCommand(doctor, ['-', '--json'], { stdin: (async function * () { yield Buffer.from(yaml) })() as unknown as NodeJS.ReadableStream })
  return (JSON.parse(run.stdout) as DoctorResult).findings.map((f) => f.code)
}

test('doctor: reads the preStop forms people use', async () => {
  // nacos: 11.5 s window + 1 s longest request + 5 s to close, 30 s default grace period.
  assert.deepEqual(await codesFor(podWith('exec: { command: ["lameduck", "prestop"] }')), [])
  assert.deepEqual(await codesFor(podWith('exec: { command: ["/app/node_modules/.bin/lameduck", "prestop", "--timeout", "60"] }')), [])
  assert.deepEqual(await codesFor(podWith('exec: { command: ["sh", "-c", "curl -s \'http://127.0.0.1:54199/offline?wait=true\'"] }')), [])
  // `curl …/offline; sleep N` with N shorter than the window works: the plugin lets the drain finish after SIGTERM.
  assert.deepEqual(await codesFor(podWith('exec: { command: ["sh", "-c", "curl -s -XPOST localhost:54199/offline; sleep 5"] }')), [])
  assert.deepEqual(await codesFor(podWith('sleep: { seconds: 5 }')), ['sleep-shorter-than-window'])
  assert.deepEqual(await codesFor(podWith('sleep: { seconds: 12 }')), [])
  assert.deepEqual(await codesFor(podWith('exec: { command: ["sleep", "40"] }')), ['grace-too-short'])
  assert.deepEqual(await codesFor(podWith('exec: { command: ["sh", "-c", "sleep 1m"] }')), ['grace-too-short'])
  // Unknown hooks are assumed to last the window.
  assert.deepEqual(await codesFor(podWith('httpGet: { path: /shutdown, port: 3000 }')), [])
  assert.deepEqual(await codesFor(podWith('httpGet: { path: /shutdown, port: 3000 }', 'eureka-node')), ['grace-too-short'])
})
