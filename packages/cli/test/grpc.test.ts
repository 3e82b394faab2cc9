// doctor and plan for a gRPC container (a grpc-js server under attachGrpc):
// Kubernetes' native gRPC probe (grpc.health.v1), never an httpGet on the gRPC port.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parse as parseYaml } from 'yaml'
import { doctor } from '../src/commands/doctor.ts'
import { plan } from '../src/commands/plan.ts'
import type { DoctorResult } from '../src/doctor/report.ts'
import { runCommand } from './helpers.ts'

const stdin = (text: string): NodeJS.ReadableStream => (async function * () { yield Buffer.from(text) })() as unknown as NodeJS.ReadableStream

async function doctorJson (yaml: string): Promise<{ code: number, result: DoctorResult }> {
  const run = await runCommand(doctor, ['-', '--json'], { stdin: stdin(yaml) })
  return { code: run.code, result: JSON.parse(run.stdout) as DoctorResult }
}

/** A gRPC Deployment that passes doctor, with its ports and readinessProbe swapped in. */
function grpcDeployment (ports: string, probe: string | null): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders
spec:
  replicas: 1
  selector:
    matchLabels: { app: orders }
  template:
    metadata:
      labels: { app: orders }
      annotations:
        lameduck.dev/windows: kubernetes
        lameduck.dev/max-request-ms: "5000"
    spec:
      terminationGracePeriodSeconds: 30
      containers:
        - name: app
          image: registry.example.com/orders:1.0.0
          ports: ${ports}
          lifecycle:
            preStop:
              exec: { command: ["lameduck", "prestop"] }
${probe === null ? '' : `          readinessProbe:\n${probe}\n            periodSeconds: 2\n            failureThreshold: 2\n`}`
}

const HTTP_ON_GRPC = '            httpGet: { path: /health/ready, port: grpc }'
const NATIVE = '            grpc: { port: 50051 }'
const codes = (r: DoctorResult): string[] => r.findings.map((f) => f.code)

test('doctor: an httpGet readinessProbe on the gRPC port is an error; the native gRPC probe (the fix) passes', async () => {
  for (const ports of ['[{ name: grpc, containerPort: 50051 }]', '[{ containerPort: 50051, appProtocol: grpc }]']) {
    const bad = await doctorJson(grpcDeployment(ports, ports.includes('name: grpc') ? HTTP_ON_GRPC : HTTP_ON_GRPC.replace('port: grpc', 'port: 50051')))
    assert.equal(bad.code, 1)
    const finding = bad.result.findings.find((f) => f.code === 'readiness-http-on-grpc')
    assert.ok(finding, `flagged for ports ${ports}: ${codes(bad.result).join(', ')}`)
    assert.match(finding.message, /HTTP\/1\.1 GET that a gRPC server \(HTTP\/2 only\) never answers/)
    assert.match(finding.fix, /grpc: \{ port: 50051 \}/)
    assert.ok(bad.result.checks.some((c) => c.code === 'readiness-http-on-grpc'), 'the check is listed as run')
    const fixed = await doctorJson(grpcDeployment(ports, NATIVE))
    assert.ok(!codes(fixed.result).some((c) => c === 'readiness-http-on-grpc' || c === 'readiness-missing'), JSON.stringify(fixed.result.findings))
  }
})

test('doctor: an httpGet on another port of a gRPC container, or on a container without gRPC, is not flagged (control)', async () => {
  const sidePort = await doctorJson(grpcDeployment('[{ name: grpc, containerPort: 50051 }, { name: http, containerPort: 8080 }]', '            httpGet: { path: /health/ready, port: 8080 }'))
  assert.ok(!codes(sidePort.result).includes('readiness-http-on-grpc'))
  const plain = await doctorJson(grpcDeployment('[{ containerPort: 3000 }]', '            httpGet: { path: /health/ready, port: 3000 }'))
  assert.ok(!codes(plain.result).includes('readiness-http-on-grpc'))
  assert.ok(!plain.result.checks.some((c) => c.code === 'readiness-http-on-grpc'), 'not run without a gRPC port')
})

test('doctor: a gRPC container without a readinessProbe gets the native gRPC probe as the fix; an HTTP one keeps httpGet', async () => {
  const grpc = await doctorJson(grpcDeployment('[{ name: grpc-api, containerPort: 9090 }]', null))
  const missing = grpc.result.findings.find((f) => f.code === 'readiness-missing')
  assert.ok(missing)
  assert.match(missing.fix, /grpc: \{ port: 9090 \}.*grpc\.health\.v1/)
  const http = await doctorJson(grpcDeployment('[{ containerPort: 3000 }]', null))
  assert.match(http.result.findings.find((f) => f.code === 'readiness-missing')!.fix, /httpGet: \{ path: \/health\/ready, port: 3000 \}/)
})

test('plan --grpc: the readiness probe is Kubernetes\' gRPC probe on --port (default 50051); without it, httpGet (control)', async () => {
  const probeOf = async (...flags: string[]): Promise<Record<string, unknown>> => {
    const run = await runCommand(plan, ['--windows', 'kubernetes', ...flags])
    assert.equal(run.code, 0, run.stderr)
    const doc = parseYaml(run.stdout) as { spec: { template: { spec: { containers: Array<{ readinessProbe: Record<string, unknown> }> } } } }
    return doc.spec.template.spec.containers[0]!.readinessProbe
  }
  assert.deepEqual(await probeOf('--grpc'), { grpc: { port: 50051 }, periodSeconds: 2, failureThreshold: 2 })
  assert.deepEqual((await probeOf('--grpc', '--port', '9090')).grpc, { port: 9090 })
  const http = await probeOf()
  assert.deepEqual(http.httpGet, { path: '/health/ready', port: 3000 })
  assert.equal(http.grpc, undefined)
  const json = await runCommand(plan, ['--windows', 'kubernetes', '--grpc', '--json'])
  assert.deepEqual(JSON.parse(json.stdout).readinessProbe.grpc, { port: 50051 })
})
