import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseAllDocuments } from 'yaml'
import { plan } from '../src/commands/plan.ts'
import { computePlan, type Plan } from '../src/plan.ts'
import { EXIT } from '../src/command.ts'
import { runCommand } from './helpers.ts'

type Doc = Record<string, any>
async function docs (args: string[]): Promise<Doc[]> {
  const run = await runCommand(plan, args)
  assert.equal(run.code, EXIT.OK, run.stderr)
  return parseAllDocuments(run.stdout).map((d) => d.toJSON() as Doc)
}
const kinds = (all: Doc[]): string[] => all.slice(1).map((d) => String(d.kind))
const rules = (all: Doc[]): string[] => (all.find((d) => d.kind === 'Role')?.rules ?? []).map((r: Doc) => `${r.apiGroups.join(',')}:${r.resources.join(',')}:${r.verbs.join(',')}`)

test('control: without the Kubernetes options the patch has no service account, gate, env or RBAC', async () => {
  const all = await docs(['--windows', 'kubernetes'])
  const spec = all[0]!.spec.template.spec
  assert.equal(spec.serviceAccountName, undefined)
  assert.equal(spec.readinessGates, undefined)
  assert.equal(spec.containers[0].env, undefined)
  assert.deepEqual(kinds(all), [])
  assert.equal(computePlan({ windows: 'kubernetes' }).kubernetes, null)
})

test('--observed-window: POD_NAME and POD_IP from the downward API, a Role to watch endpointslices and nothing more', async () => {
  const all = await docs(['--windows', 'kubernetes', '--observed-window'])
  const spec = all[0]!.spec.template.spec
  assert.equal(spec.serviceAccountName, 'orders-lameduck')
  assert.equal(spec.readinessGates, undefined)
  assert.deepEqual(spec.containers[0].env, [
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }
  ])
  assert.deepEqual(kinds(all), ['ServiceAccount', 'Role', 'RoleBinding'])
  assert.deepEqual(rules(all), ['discovery.k8s.io:endpointslices:get,list,watch'])
  const binding = all.find((d) => d.kind === 'RoleBinding')!
  assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'orders-lameduck' })
  assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'orders-lameduck' }])
  const text = (await runCommand(plan, ['--windows', 'kubernetes', '--observed-window', '--data-plane-lag-ms', '3000'])).stdout
  assert.match(text, /windowEvidence: observedWindow\(\{ dataPlaneLagMs: 3000 \}\)/)
})

test('--readiness-gate: readinessGates on the pod, a Role to patch pods/status, POD_NAME only', async () => {
  const all = await docs(['--windows', 'eureka-ribbon', '--readiness-gate', '--warmup-ms', '60000', '--gate-warmup-fraction', '0.5', '--service-account', 'orders-sa'])
  const spec = all[0]!.spec.template.spec
  assert.deepEqual(spec.readinessGates, [{ conditionType: 'lameduck.dev/registered' }])
  assert.equal(spec.serviceAccountName, 'orders-sa')
  assert.deepEqual(spec.containers[0].env.map((e: Doc) => e.name), ['POD_NAME'])
  assert.deepEqual(rules(all), [':pods/status:patch'])
  assert.ok(all.slice(1).every((d) => d.metadata.name === 'orders-sa'))
  assert.match((await runCommand(plan, ['--windows', 'eureka-ribbon', '--readiness-gate', '--gate-warmup-fraction', '0.5'])).stdout, /observers: \[readinessGate\(\{ warmupFraction: 0\.5 \}\)\]/)
})

test('both options: one Role with both rules; --json carries them', async () => {
  const all = await docs(['--windows', 'kubernetes', '--observed-window', '--readiness-gate'])
  assert.deepEqual(rules(all), ['discovery.k8s.io:endpointslices:get,list,watch', ':pods/status:patch'])
  const json = JSON.parse((await runCommand(plan, ['--windows', 'kubernetes', '--observed-window', '--readiness-gate', '--json'])).stdout) as Plan
  assert.deepEqual(json.kubernetes!.rules.map((r) => r.resources[0]), ['endpointslices', 'pods/status'])
  assert.equal(json.kubernetes!.observedWindow!.dataPlaneLagMs, 5000)
  assert.equal(json.kubernetes!.readinessGate!.conditionType, 'lameduck.dev/registered')
})

test('an observed window can end at the flip + dataPlaneLagMs: the keep-alive bound follows the shortest window', () => {
  assert.equal(computePlan({ windows: 'kubernetes' }).maxKeepAliveTimeoutMs, 15_000)
  assert.equal(computePlan({ windows: 'kubernetes', observedWindow: {} }).maxKeepAliveTimeoutMs, 5_000)
  assert.equal(computePlan({ windows: 'kubernetes', observedWindow: { dataPlaneLagMs: 2_500 } }).maxKeepAliveTimeoutMs, 2_000)
  // The registry's own parts still count in full.
  assert.equal(computePlan({ windows: { preset: 'nacos', endpointLagMs: 15_000 }, observedWindow: {} }).maxKeepAliveTimeoutMs, 11_000)
})

test('bad flags: each names the fix', async () => {
  for (const [args, message] of [
    [['--data-plane-lag-ms', '100'], /--data-plane-lag-ms needs --observed-window/],
    [['--gate-warmup-fraction', '0.5'], /--gate-warmup-fraction needs --readiness-gate/],
    [['--readiness-gate', '--gate-warmup-fraction', '2'], /from 0 to 1/],
    [['--readiness-gate', '--gate-warmup-fraction', ''], /from 0 to 1/],
    [['--service-account', 'x'], /needs --observed-window or --readiness-gate/],
    [['--observed-window', '--service-account', 'Bad_Name'], /Kubernetes name/]
  ] as const) {
    const run = await runCommand(plan, ['--windows', 'kubernetes', ...args]).catch((err: Error) => ({ code: -1, stderr: err.message }))
    assert.notEqual(run.code, EXIT.OK, args.join(' '))
    assert.match(run.stderr, message, args.join(' '))
  }
})
