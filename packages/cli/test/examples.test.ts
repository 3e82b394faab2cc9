import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'
import { doctor } from '../src/commands/doctor.ts'
import { EXIT } from '../src/command.ts'
import { computePlan, type PlanInput } from '../src/plan.ts'
import type { DoctorResult } from '../src/doctor/report.ts'
import { runCommand } from './helpers.ts'

const EXAMPLES = fileURLToPath(new URL('../../../examples/k8s/', import.meta.url))
const manifests = readdirSync(EXAMPLES).filter((f) => f.endsWith('.yaml')).sort()

// How each example says it was planned (its header comment runs the same `lameduck plan`).
const PLANNED: Record<string, Omit<PlanInput, 'windows'>> = {
  '01-kubernetes-service.yaml': { maxRequestMs: 5_000 },
  '02-eureka-provider.yaml': { maxRequestMs: 5_000 },
  '03-istio-sidecar.yaml': { maxRequestMs: 5_000, sidecar: 'istio', istioMode: 'classic' },
  '04-native-sidecar.yaml': { maxRequestMs: 5_000, sidecar: 'native', envoyDrainStrategy: 'immediate' },
  '05-istio-native.yaml': { maxRequestMs: 5_000, sidecar: 'istio' },
  '06-istio-ambient.yaml': { maxRequestMs: 5_000, ambient: true, warmupMs: 30_000 }
}

test('examples/k8s: the six examples are there', () => {
  assert.deepEqual(manifests, Object.keys(PLANNED))
})

for (const file of manifests) {
  test(`examples/k8s/${file} passes lameduck doctor without a finding, even --strict`, async () => {
    const run = await runCommand(doctor, [`${EXAMPLES}${file}`, '--json', '--strict'])
    const result = JSON.parse(run.stdout) as DoctorResult
    assert.deepEqual(result.findings, [])
    assert.equal(run.code, EXIT.OK)
    assert.ok(result.objects.some((o) => o.window !== undefined), 'has a workload')
  })

  test(`examples/k8s/${file} uses the CLI in its hooks and the grace period \`lameduck plan\` computes`, () => {
    const text = readFileSync(`${EXAMPLES}${file}`, 'utf8')
    assert.match(text, /command: \["lameduck", "prestop"\]/)
    const workload = parseAllDocuments(text).map((d) => d.toJS()).find((o) => o?.kind === 'Deployment')
    const template = workload.spec.template
    const plan = computePlan({ windows: template.metadata.annotations['lameduck.dev/windows'], ...PLANNED[file] })
    assert.equal(template.spec.terminationGracePeriodSeconds, plan.terminationGracePeriodSeconds)
    if (plan.warmup) assert.equal(workload.spec.minReadySeconds, plan.warmup.minReadySeconds)
    for (const [k, v] of Object.entries(plan.annotations)) assert.equal(template.metadata.annotations[k], v, k)
    if (plan.istio) {
      assert.equal(template.metadata.annotations['sidecar.istio.io/nativeSidecar'], String(plan.istio.mode === 'native'))
      assert.equal(template.metadata.annotations['sidecar.istio.io/statsInclusionSuffixes'], plan.istio.statsInclusionSuffixes)
    }
    // every example says how it was planned
    assert.match(text, /^# Numbers: `lameduck plan /m)
    assert.equal(template.metadata.annotations['lameduck.dev/max-request-ms'], String(plan.maxRequestMs))
    assert.ok(text.includes(`shutdownTimeoutMs ${plan.shutdownTimeoutMs / 1000} s`), 'the header comment states the plugin\'s shutdownTimeoutMs')
    if (PLANNED[file]!.istioMode === 'classic') {
      assert.match(text, /wait-drained/)
      assert.match(text, /holdApplicationUntilProxyStarts: true/)
    }
    if (PLANNED[file]!.sidecar === 'istio' && PLANNED[file]!.istioMode !== 'classic') assert.doesNotMatch(text, /name: istio-proxy/)
    if (PLANNED[file]!.sidecar === 'native') assert.match(text, /restartPolicy: Always/)
  })
}
