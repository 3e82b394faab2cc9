// doctor and plan share one formula (core's shutdown budget with the plugin's
// defaults), doctor sees Istio injection set on the Namespace, and inputs that
// doctor cannot judge are usage errors (exit 2) that say why.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { WINDOW_PRESETS } from '@lameduck/core'
import { doctor } from '../src/commands/doctor.ts'
import { plan } from '../src/commands/plan.ts'
import { EXIT } from '../src/command.ts'
import { main } from '../src/main.ts'
import type { DoctorResult } from '../src/doctor/report.ts'
import { Capture, runCommand } from './helpers.ts'

const stdin = (text: string): NodeJS.ReadableStream => (async function * () { yield Buffer.from(text) })() as unknown as NodeJS.ReadableStream

async function doctorJson (yaml: string, ...flags: string[]): Promise<{ code: number, result: DoctorResult, stderr: string }> {
  const run = await runCommand(doctor, ['-', '--json', ...flags], { stdin: stdin(yaml) })
  return { code: run.code, result: JSON.parse(run.stdout) as DoctorResult, stderr: run.stderr }
}

async function cli (argv: string[], input?: string): Promise<{ code: number, stdout: string, stderr: string }> {
  const stdout = new Capture()
  const stderr = new Capture()
  const code = await main(argv, { stdout, stderr, env: {}, signal: new AbortController().signal, ...(input === undefined ? {} : { stdin: stdin(input) }) })
  return { code, stdout: stdout.text, stderr: stderr.text }
}

interface PodShape { annotations?: Record<string, string>, labels?: Record<string, string>, namespace?: string, grace?: number, extraContainers?: string }

function deployment (shape: PodShape = {}): string {
  const map = (m: Record<string, string> = {}): string => `{ ${Object.entries(m).map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', ')} }`
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders${shape.namespace ? `\n  namespace: ${shape.namespace}` : ''}
spec:
  selector:
    matchLabels: { app: orders }
  template:
    metadata:
      labels: ${map({ app: 'orders', ...shape.labels })}
      annotations: ${map(shape.annotations)}
    spec:
      terminationGracePeriodSeconds: ${shape.grace ?? 1}
      containers:
        - name: app
          image: registry.example.com/orders:1.0.0
          ports: [{ containerPort: 3000 }]
          lifecycle: { preStop: { exec: { command: ["lameduck", "prestop"] } } }
          readinessProbe: { httpGet: { path: /health/ready, port: 3000 }, periodSeconds: 1, failureThreshold: 1 }
${shape.extraContainers ?? ''}`
}

function namespace (name: string, labels: Record<string, string>): string {
  return `apiVersion: v1
kind: Namespace
metadata:
  name: ${name}
  labels: { ${Object.entries(labels).map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', ')} }
`
}

const fixValue = (result: DoctorResult): number | undefined => {
  const f = result.findings.find((x) => x.code === 'grace-too-short')
  const m = f?.fix.match(/terminationGracePeriodSeconds: (\d+) or more/)
  return m ? Number(m[1]) : undefined
}

async function planGrace (...argv: string[]): Promise<number> {
  const run = await runCommand(plan, [...argv, '--json'])
  assert.equal(run.code, EXIT.OK, run.stderr)
  return (JSON.parse(run.stdout) as { terminationGracePeriodSeconds: number }).terminationGracePeriodSeconds
}

test('doctor\'s grace-period fix equals plan\'s terminationGracePeriodSeconds for every preset and sidecar', async () => {
  for (const preset of Object.keys(WINDOW_PRESETS)) {
    for (const sidecar of ['none', 'istio', 'native'] as const) {
      const sidecarFlag = sidecar === 'none' ? [] : ['--sidecar', sidecar]
      // The plugin's default maxRequestMs (30 s) on both sides, then a declared one.
      const defaults = await doctorJson(deployment({ annotations: { 'lameduck.dev/windows': preset } }), '--sidecar', sidecar)
      assert.equal(fixValue(defaults.result), await planGrace('--windows', preset, ...sidecarFlag), `${preset}, sidecar ${sidecar}, default longest request`)
      assert.equal(defaults.result.objects[0]!.budget!.terminationGracePeriodSeconds, fixValue(defaults.result))
      const declared = await doctorJson(deployment({ annotations: { 'lameduck.dev/windows': preset, 'lameduck.dev/max-request-ms': '4500' } }), '--sidecar', sidecar)
      assert.equal(fixValue(declared.result), await planGrace('--windows', preset, '--max-request-ms', '4500', ...sidecarFlag), `${preset}, sidecar ${sidecar}, 4.5 s longest request`)
    }
  }
})

test('doctor: eureka-ribbon with a 30 s grace period asks for what plan prints (130), not 95', async () => {
  const { code, result } = await doctorJson(deployment({ annotations: { 'lameduck.dev/windows': 'eureka-ribbon' }, grace: 30 }))
  assert.equal(code, EXIT.FAILED)
  assert.equal(fixValue(result), 130)
  assert.equal(await planGrace('--windows', 'eureka-ribbon'), 130)
  assert.match(result.findings.find((f) => f.code === 'grace-too-short')!.message, /90 s window .* \+ 30 s longest request \+ 5 s to close/)
  assert.match(result.objects[0]!.window!.maxRequestSource, /the plugin's default; set annotation lameduck\.dev\/max-request-ms/)
  // A pod that follows plan passes doctor.
  const followed = await doctorJson(deployment({ annotations: { 'lameduck.dev/windows': 'eureka-ribbon' }, grace: 130 }))
  assert.deepEqual(followed.result.findings, [])
})

test('doctor sees Istio injection enabled on the Namespace in the same input (istio-injection=enabled, istio.io/rev)', async () => {
  const app = deployment({ annotations: { 'lameduck.dev/windows': 'kubernetes' }, grace: 200 })
  const codes = async (yaml: string): Promise<string[]> => (await doctorJson(yaml)).result.findings.map((f) => f.code).sort()
  assert.deepEqual(await codes(app), [], 'no injection anywhere: no sidecar findings')
  for (const labels of [{ 'istio-injection': 'enabled' }, { 'istio.io/rev': 'canary' }] as Array<Record<string, string>>) {
    const yaml = `${namespace('shop', labels)}---\n${app}`
    assert.deepEqual(await codes(yaml), ['istio-hold-off', 'istio-idle-stats', 'sidecar-stops-first'], JSON.stringify(labels))
    const { result } = await doctorJson(yaml)
    assert.equal(result.objects.find((o) => o.object === 'Deployment/orders')!.budget!.sidecar, 'istio')
    assert.match(result.findings.find((f) => f.code === 'sidecar-stops-first')!.message, /Namespace\/shop enables injection/)
  }
  // The workload in another namespace, a disabled namespace, and a pod that opts out see none of it.
  assert.deepEqual(await codes(`${namespace('shop', { 'istio-injection': 'enabled' })}---\n${deployment({ namespace: 'other', grace: 200 })}`), [])
  assert.deepEqual(await codes(`${namespace('shop', { 'istio-injection': 'disabled', 'istio.io/rev': 'canary' })}---\n${app}`), [])
  assert.deepEqual(await codes(`${namespace('shop', { 'istio-injection': 'enabled' })}---\n${deployment({ labels: { 'sidecar.istio.io/inject': 'false' }, grace: 200 })}`), [])
  // Its own namespace named explicitly works with several Namespaces in the file.
  const two = `${namespace('a', {})}---\n${namespace('shop', { 'istio-injection': 'enabled' })}---\n${deployment({ namespace: 'shop', grace: 200 })}`
  assert.deepEqual(await codes(two), ['istio-hold-off', 'istio-idle-stats', 'sidecar-stops-first'])
})

test('doctor --sidecar istio|native|none overrides what the manifest says', async () => {
  const app = deployment({ annotations: { 'lameduck.dev/windows': 'kubernetes' }, grace: 200 })
  assert.deepEqual((await doctorJson(app, '--sidecar', 'istio')).result.findings.map((f) => f.code).sort(), ['istio-hold-off', 'istio-idle-stats', 'sidecar-stops-first'])
  const injected = `${namespace('shop', { 'istio-injection': 'enabled' })}---\n${app}`
  const none = await doctorJson(injected, '--sidecar', 'none')
  assert.deepEqual(none.result.findings, [])
  assert.equal(none.result.objects.find((o) => o.object === 'Deployment/orders')!.budget!.sidecar, null)
  assert.equal((await doctorJson(app, '--sidecar', 'native')).result.objects[0]!.budget!.sidecar, 'native')
  const bad = await cli(['doctor', '-', '--sidecar', 'linkerd'], app)
  assert.equal(bad.code, EXIT.USAGE)
  assert.match(bad.stderr, /--sidecar: must be one of 'istio', 'native', 'none'; got 'linkerd'/)
})

test('doctor: an input without a workload is exit 2 with what it found', async () => {
  const service = 'apiVersion: v1\nkind: Service\nmetadata: { name: orders }\nspec: { selector: { app: orders } }\n'
  const r = await cli(['doctor', '-'], service)
  assert.equal(r.code, EXIT.USAGE)
  assert.match(r.stderr, /^lameduck doctor: no workload in <stdin>: found Service\/orders\. Give the Deployment, StatefulSet, DaemonSet or Pod/m)
  const empty = await cli(['doctor', '-'], 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }\n')
  assert.equal(empty.code, EXIT.USAGE)
  assert.match(empty.stderr, /no workload in <stdin>: found nothing it checks/)
})

test('doctor --windows parts out of range: exit 2 naming the part under --windows, checked before any manifest is read', async () => {
  const r = await cli(['doctor', 'no-such-file.yaml', '--windows', '{"endpointLagMs":-1}'], '')
  assert.equal(r.code, EXIT.USAGE)
  assert.match(r.stderr, /^lameduck doctor: --windows\.endpointLagMs: must be a non-negative number of milliseconds, got number -1\nRun 'lameduck doctor --help'/)
})

test('doctor --windows with JSON that does not parse is exit 2 with the parse error, not "unexpected error"', async () => {
  const r = await cli(['doctor', '-', '--windows', '{bad'], deployment())
  assert.equal(r.code, EXIT.USAGE)
  assert.doesNotMatch(r.stderr, /unexpected error/)
  assert.match(r.stderr, /^lameduck doctor: --windows: not valid JSON \(.+\); give a preset name or JSON parts/m)
  // The same text in an annotation is a finding on its line, as before.
  const { result } = await doctorJson(deployment({ annotations: { 'lameduck.dev/windows': '{bad' } }))
  assert.match(result.findings.find((f) => f.code === 'bad-annotation')!.message, /annotation lameduck\.dev\/windows: not valid JSON/)
})
